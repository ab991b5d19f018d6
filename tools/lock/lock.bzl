"""`lock_test`: keeps a pip-compile lock consistent with its requirements file (lock_check.py)."""

load("//tools/bazel:python.bzl", "py_test")

def lock_test(name, requirements, lock):
    """A test that fails when `lock` is not a complete, hash-pinned lock of `requirements`.

    Refresh the locks with `bazel run //:requirements.update`.

    Args:
      name: the test's name.
      requirements: label of the requirements file (e.g. `:requirements.in`).
      lock: label of its pip-compile lock (e.g. `:requirements_lock.txt`).
    """
    py_test(
        name = name,
        srcs = ["//tools/lock:lock_check.py"],
        main = "//tools/lock:lock_check.py",
        args = [
            "$(rootpath {})".format(requirements),
            "$(rootpath {})".format(lock),
        ],
        data = [
            requirements,
            lock,
        ],
    )
