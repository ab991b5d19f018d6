"""What a program does with the words it is given, as the agent-side guard reads a shell command
(docs/design.md section 13): which programs only read, which write what (`writes`), which change
what a folder holds, which run another command (wrappers), and the git subcommands that take a
revision's files, apply patches or move refs. Pure functions of the words; guard/shell.py splits
the command and keeps the folder. Sources: each program's manual page (coreutils, sed, find, tar,
unzip, sudo, env, git).
"""

from __future__ import annotations

import re

# Programs that read the files they are given and write none (write targets of their
# redirections are checked apart). Sources: each program's manual page (coreutils, grep, git).
READERS = frozenset(
    {
        "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "wc", "diff", "cmp",
        "ls", "stat", "file", "sha256sum", "sha1sum", "sha512sum", "md5sum", "b2sum", "cksum", "nl", "jq",
        "tree", "du", "realpath", "readlink", "basename", "dirname", "test", "[", "echo", "printf", "pwd",
        "which", "type", "true", "false", "od", "xxd", "hexdump", "strings", "column", "cut", "tr", "comm",
        "fold", "bat", "cd", "pushd", "popd", "exit", "return", "sleep", "date", "whoami", "id", "uname",
        "env", "printenv", "wait",
    }
)  # fmt: skip
# git subcommands that change no file of the work tree (staging and committing included: the gate
# judges what a commit changed).
GIT_READERS = frozenset(
    {
        "diff", "log", "show", "status", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "cat-file",
        "shortlog", "describe", "add", "commit", "fetch", "push", "branch", "tag", "remote", "reflog",
        "merge-base", "rev-list", "name-rev", "show-ref", "for-each-ref", "whatchanged", "range-diff",
        "format-patch", "help", "version", "var", "config",
    }
)  # fmt: skip
# Programs that change what a folder they are given holds: every file below it counts. For the
# copying ones (COPIERS) only the destination is written.
DESTRUCTIVE = frozenset(
    {"rm", "rmdir", "mv", "cp", "ln", "install", "rsync", "chmod", "chown", "chgrp", "touch", "truncate", "shred",
     "tar", "unzip", "cpio", "sponge", "mkdir", "rename", "unlink"}
)  # fmt: skip
COPIERS = frozenset({"cp", "ln", "install", "rsync"})
# A `sed` script command that writes a file (`w FILE`, `s/a/b/w FILE`).
_SED_WRITE = re.compile(r"(^|[;{}\n]|/[gpiImMe0-9]*)\s*[wW]\s*\S")
# Programs that run the command after their own options: skipped, and the rest read as a command.
WRAPPERS = frozenset(
    {"sudo", "nohup", "time", "timeout", "nice", "exec", "command", "builtin", "stdbuf", "xargs", "doas", "setsid",
     "ionice", "chronic", "unbuffer", "busybox", "flock", "watch", "nsenter", "chroot"}
)  # fmt: skip
# The wrappers' options that take the next word as their value (their manual pages).
WRAPPER_VALUES = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--chdir"}),
    "doas": frozenset({"-u", "-C"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "exec": frozenset({"-a"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "watch": frozenset({"-n", "--interval"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"}),
    "env": frozenset({"-u", "-C", "-S", "--chdir", "--split-string", "--unset"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
}
# Programs whose given script or computed arguments decide what they touch: every word counts,
# and an indirect command (`Words.indirect`) that also names a protected path is refused.
INDIRECT_PROGRAMS = frozenset({"xargs", "parallel", "eval"})
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
# Interpreters: what a script touches is decided when it runs, so the command counts as computing
# its targets (`Words.indirect`), and every path-like piece of its words (a `-c` string, a
# here-document's lines) is named.
INTERPRETERS = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|perl|ruby|node|nodejs|deno|bun|php|lua|awk|gawk|mawk|Rscript|tclsh)"
)
# git subcommands that write the files a patch names (their file arguments, or stdin).
GIT_PATCHERS = frozenset({"apply", "am"})
# git subcommands that set the work tree to a revision's files (for the revisions they name).
GIT_CHECKOUTS = frozenset(
    {
        "checkout",
        "switch",
        "reset",
        "restore",
        "stash",
        "merge",
        "cherry-pick",
        "revert",
        "rebase",
        "bisect",
        "read-tree",
    }
)
# git subcommands that move refs by hand.
GIT_REF_MOVERS = frozenset({"update-ref", "symbolic-ref", "replace"})
# A shell assignment word (`NAME=value`).
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=(.*)", re.DOTALL)
# `git config` forms that only read.
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch", "--show-origin"})


def option_value(rest: list[str], options: tuple[str, ...]) -> str | None:
    """The value of the first of `options` among `rest` (`-C DIR`, `-CDIR`, `--chdir=DIR`), or None."""
    for index, word in enumerate(rest):
        for option in options:
            if word == option and index + 1 < len(rest):
                return rest[index + 1]
            if option.startswith("--") and word.startswith(option + "="):
                return word.split("=", 1)[1]
            if not option.startswith("--") and word.startswith(option) and len(word) > len(option):
                return word[len(option) :]
    return None


def find_destroys(rest: list[str]) -> bool:
    """True for a `find` that deletes, or runs a DESTRUCTIVE program on what it finds."""
    if "-delete" in rest:
        return True
    return any(
        word in ("-exec", "-execdir", "-ok", "-okdir")
        and index + 1 < len(rest)
        and rest[index + 1].rsplit("/", 1)[-1] in DESTRUCTIVE
        for index, word in enumerate(rest)
    )


def git_sub(rest: list[str]) -> str:
    """The git subcommand among `rest` (git's words after `git`), or ""."""
    return next((w for w in rest if not w.startswith("-")), "")


def destination(rest: list[str]) -> list[str]:
    """What a copying program (COPIERS) writes: its `-t DIR`/`--target-directory=DIR`, else its
    last word that is not an option."""
    for index, word in enumerate(rest):
        if word.startswith("--t"):  # --target-directory, or any abbreviation of it
            if "=" in word:
                return [word.split("=", 1)[1]]
            return rest[index + 1 : index + 2]
        if word.startswith("-") and not word.startswith("--") and "t" in word[1:]:
            value = word[word.index("t", 1) + 1 :]  # `-t DIR`, `-tDIR`, `-rt DIR`
            return [value] if value else rest[index + 1 : index + 2]
    words = [w for w in rest if not w.startswith("-")]
    return words[-1:]


def skips_hooks(sub: str, rest: list[str]) -> bool:
    """True for a git command that switches the clone's hooks off for itself: `--no-verify`
    (`commit -n`), or `-c core.hooksPath=...`."""
    if "--no-verify" in rest or (sub == "commit" and "-n" in rest):
        return True
    return any(w.lower().startswith("core.hookspath") for w in rest)


def sets_config(sub: str, words: list[str], rest: list[str]) -> bool:
    """True for a git command that writes the clone's configuration: `git config` that sets,
    unsets or removes, and `git remote add/set-url/remove/rename/set-head`."""
    if sub == "config":
        return not _GIT_CONFIG_READS & set(rest) and (len(words) > 2 or len(rest) > len(words))
    return sub == "remote" and len(words) > 1 and words[1] in ("add", "set-url", "remove", "rm", "rename", "set-head")


def moves_refs(sub: str, words: list[str], rest: list[str]) -> bool:
    """True for a git command that moves a ref by hand (GIT_REF_MOVERS, a fetch into a named ref,
    `branch -f/-M/-D/-C`)."""
    if sub in GIT_REF_MOVERS or (sub == "fetch" and any(":" in w for w in words[1:])):
        return True
    return sub == "branch" and bool({"-f", "--force", "-M", "-D", "-C"} & set(rest))


def writes(program: str, rest: list[str]) -> list[str] | None:
    """The words `program` writes for sure, or None when it only reads (READERS, GIT_READERS,
    `sed` and `find` without their writing options, `sort` without `-o`)."""
    if program == "git":
        sub = next((w for w in rest if not w.startswith("-")), "")
        return None if sub in GIT_READERS else []
    if program == "sed":
        if any(_SED_WRITE.search(w) for w in rest if not w.startswith("-")):
            return []  # a `w FILE` command: its words are given, the script's pieces too
        if not any(_sed_in_place(w) for w in rest):
            return None
        files, scripted, skip = [], False, False
        for word in rest:
            if skip:
                skip = False
            elif word in ("-e", "-f", "--expression", "--file"):
                scripted = skip = True
            elif word.startswith(("--expression=", "--file=")):
                scripted = True
            elif not word.startswith("-"):
                files.append(word)
        return files if scripted else files[1:]  # without -e or -f, the first word is the script
    if program == "find":
        if {"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"} & set(rest):
            return []
        for index, word in enumerate(rest):  # `-exec CMD ...`: a writer when CMD may write
            if word in ("-exec", "-execdir", "-ok", "-okdir") and index + 1 < len(rest):
                inner = rest[index + 1].rsplit("/", 1)[-1]
                if writes(inner, rest[index + 2 :]) is not None:
                    return []
        return None
    if program == "sort":
        return [] if any(w == "-o" or w.startswith(("-o", "--output")) for w in rest) else None
    if program == "tee":
        return [w for w in rest if not w.startswith("-")]
    if program == "dd":
        return [w[3:] for w in rest if w.startswith("of=")]
    if program in ("tar", "unzip"):
        return _extracted_into(program, rest)
    if program in READERS:
        return None
    return []


def _extracted_into(program: str, rest: list[str]) -> list[str] | None:
    """The folder an archive program extracts into (`tar -x ... -C DIR`, `unzip -d DIR`; default
    `.`), or None when it does not extract (`tar -t`, `tar -c` to a file: its words are checked as
    given)."""
    flags = "".join(w.lstrip("-") for w in rest[:1] if not w.startswith("--")) + "".join(
        w[1:] for w in rest[1:] if w.startswith("-") and not w.startswith("--")
    )
    if program == "tar" and "x" not in flags and "--extract" not in rest and "--get" not in rest:
        return [] if "c" in flags or "r" in flags or "u" in flags else None
    for option in ("-C", "--directory", "-d"):
        if option in rest and rest.index(option) + 1 < len(rest):
            return [rest[rest.index(option) + 1]]
    given = [w.split("=", 1)[1] for w in rest if w.startswith("--directory=")]
    return given or ["."]


def _sed_in_place(word: str) -> bool:
    """True for a `sed` option word that edits in place (`-i`, `-i.bak`, `-ni`, `--in-place`)."""
    if word.startswith("--in-place"):
        return True
    return word.startswith("-") and not word.startswith("--") and "i" in word[1:].split(".")[0]


def after_options(rest: list[str], program: str) -> list[str]:
    """The command a wrapper runs: its words after the wrapper's options (with the values of
    WRAPPER_VALUES), `env`'s assignments and `timeout`'s duration."""
    index = 0
    while index < len(rest) and (rest[index].startswith("-") or ASSIGNMENT.fullmatch(rest[index])):
        index += 2 if rest[index] in WRAPPER_VALUES.get(program, ()) else 1
    if program == "timeout" and index < len(rest):
        index += 1
    return rest[index:]


def shell_script(rest: list[str]) -> str | None:
    """The script of `bash -c SCRIPT` (or `-lc`, `-ec`, ...), or None."""
    for index, word in enumerate(rest):
        if word.startswith("-") and not word.startswith("--") and "c" in word and index + 1 < len(rest):
            return rest[index + 1]
    return None
