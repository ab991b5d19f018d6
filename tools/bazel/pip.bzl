"""Public entry point for the locked third-party Python repository rule."""

load("//tools/bazel/private:pip_lock_repository.bzl", _pip_lock_repository = "pip_lock_repository")

pip_lock_repository = _pip_lock_repository
