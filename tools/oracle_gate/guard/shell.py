"""Which paths a shell command may write (docs/design.md section 13): the command split into
simple commands, each program's words sorted by what the program does with them
(guard/programs.py), and the folder each runs in kept; the result is `Words`.

This is a reading of the command's words, not a shell: it follows `;`, `&&`, `||`, `|`, `&`,
newlines, `( )`, `$( )`, `<( )`, `>( )` and back quotes, `cd`, here-documents, `bash -c`/`eval`
strings and shell script files (read again as commands), and the wrappers (the command they run).
A path a program computes when it runs (a script's own `open()`, a variable set elsewhere) is not
seen; the hook's rules for indirection (`Words.computes_targets`, `.scripted`, `.unjudged`) cover
the common forms, and the gate in CI judges what was written either way (docs/threat-model.md).
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from dataclasses import dataclass, field

from tools.oracle_gate.guard.programs import (
    ASSIGNMENT,
    COPIERS,
    DESTRUCTIVE,
    GIT_CHECKOUTS,
    GIT_PATCHERS,
    GIT_READERS,
    INDIRECT_PROGRAMS,
    INTERPRETERS,
    SHELLS,
    WRAPPERS,
    after_options,
    destination,
    find_destroys,
    git_sub,
    moves_refs,
    option_value,
    sets_config,
    shell_script,
    skips_hooks,
    writes,
)

# Redirection operators whose next word is a file written.
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
# Command boundaries among the lexer's punctuation tokens.
_BOUNDARIES = frozenset({";", "&&", "||", "|", "&", "\n", "(", ")", "|&", ";;", "$", "{", "}"})
_SHELL_WORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac", "!", "in"}
)
# The largest shell script file the guard reads (bytes).
MAX_SCRIPT = 256 * 1024
# Here-document operators and their delimiters (`<<EOF`, `<<-'EOF'`, `<< "EOF"`).
_HERE_DOC = re.compile(r"<<(-?)\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")
# How deep the guard reads commands inside commands (`bash -c`, `$(...)`, here-documents).
MAX_DEPTH = 6
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
# A word holding one of these is read as a script too: its path-like pieces count.
_SCRIPT_CHARS = " '\"(),;:{}=+"
# Path-like pieces of a word that is a script (`python -c`, `awk`, `perl -e`, a quoted string).
_PIECE = re.compile(r"[A-Za-z0-9_.@+~/*?\[\]-]+")


@dataclass
class Words:
    """What `command_words` found.

    Attributes:
        written: (word, cwd) pairs the command writes for sure: redirection targets, `tee`'s files,
            `sed -i`'s files, `dd of=`.
        given: (word, cwd) pairs given to a program not known to only read (READERS, GIT_READERS):
            a protected path, or a folder a glob protects as a whole, counts.
        deep: (word, cwd) pairs given to a program that changes what a folder holds (DESTRUCTIVE:
            `rm`, `mv`, the destination of `cp`, `git checkout`, an archive's target folder, ...):
            a folder counts when any file below it is protected.
        named: (word, cwd) pairs of every word and path-like piece of the command, read or not.
        indirect: the command computes what it writes (xargs, parallel, eval, source, a `$`
            expansion in a writing program's arguments).
        loop: the command has a `for`, `while` or `until` loop (indirect when it also writes).
        patches: (word, cwd) pairs of files holding patches the command applies (`git apply`,
            `git am`, `patch`, and the input redirections of a command that runs one).
        revisions: (word, cwd) pairs a `git checkout`, `switch`, `reset`, `restore`, `stash`,
            `merge`, `cherry-pick` or `revert` names: the work tree may take a revision's files.
        git_config: the command writes the clone's git configuration (`git config` that sets).
        git_refs: the command moves a ref by hand (`git update-ref`, `symbolic-ref`, a `fetch`
            into a named ref, `branch -f`): the base the guard reads its policy from may move.
        scripted: the command runs an interpreter (INTERPRETERS), whose script decides what it
            writes: every path its words name counts, as the path itself (not a folder's files).
        reads_commands: a shell reads commands from stdin (`bash`, `sh -s`): a here-document is
            read as commands.
        unjudged: why the guard cannot judge the command (a script it cannot read, a pathspec
            it cannot follow), or "".
        unknown_cwd: a `cd` whose target the words do not give (`cd "$X"`); later relative
            paths are taken from the last known folder and the command counts as indirect.
    """

    written: list[tuple[str, str]] = field(default_factory=list)
    given: list[tuple[str, str]] = field(default_factory=list)
    deep: list[tuple[str, str]] = field(default_factory=list)
    named: list[tuple[str, str]] = field(default_factory=list)
    indirect: bool = False
    loop: bool = False
    unknown_cwd: bool = False
    patches: list[tuple[str, str]] = field(default_factory=list)
    revisions: list[tuple[str, str]] = field(default_factory=list)
    git_config: bool = False
    git_refs: bool = False
    scripted: bool = False
    reads_commands: bool = False
    unjudged: str = ""
    inputs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def computes_targets(self) -> bool:
        """True when what the command writes is computed as it runs: `indirect`, or a loop in a
        command that writes or gives words to a program that may write."""
        return self.indirect or (self.loop and self.writes)

    @property
    def writes(self) -> bool:
        """True when the command writes, or gives words to a program that may write."""
        return bool(
            self.written
            or self.given
            or self.deep
            or self.patches
            or self.revisions
            or self.git_config
            or self.git_refs
        )


def command_words(command: str, cwd: str, depth: int = 0) -> Words:
    """The words of `command` run in the folder `cwd` (absolute), sorted as `Words` says.

    Raises:
        ValueError: when the command cannot be split into words (an unclosed quote).
    """
    found = Words()
    if depth > MAX_DEPTH:
        found.unjudged = "commands nested deeper than the guard reads"
        return found
    text, bodies = _here_documents(command.replace("\\\n", ""))
    for inner in _substitutions(text):  # `$(...)`, `<(...)`, `>(...)` and back quotes, even in double quotes
        _merge(found, command_words(inner, cwd, depth + 1))
    if "CDPATH" in text:
        found.unknown_cwd = True
    tokens = _tokens(text)
    for segment in _segments(tokens):
        cwd = _segment(segment, cwd, found, depth)
    for body in bodies:  # a here-document is data, except to a shell or an interpreter reading it
        found.named.extend((piece, cwd) for piece in _PIECE.findall(body))
        if found.reads_commands:
            _merge(found, command_words(body, cwd, depth + 1))
    return found


def _here_documents(command: str) -> tuple[str, list[str]]:
    """`command` without its here-documents' bodies (each body's lines up to its delimiter line),
    and the bodies."""
    bodies: list[str] = []
    lines = command.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        for _dash, delimiter in _HERE_DOC.findall(line):
            body = []
            while index < len(lines) and lines[index].strip() != delimiter:
                body.append(lines[index])
                index += 1
            index += 1
            bodies.append("\n".join(body))
    return "\n".join(out), bodies


def _substitutions(command: str) -> list[str]:
    """The commands inside `$(...)`, `<(...)`, `>(...)` (balanced parentheses) and back quotes."""
    out = []
    for found in re.finditer(r"[$<>]\(", command):
        level, index = 1, found.end()
        while index < len(command) and level:
            level += {"(": 1, ")": -1}.get(command[index], 0)
            index += 1
        out.append(command[found.end() : index - 1])
    out.extend(command.split("`")[1::2])
    return out


def _tokens(command: str) -> list[str]:
    """The command's words and operators (shlex, POSIX rules; newlines kept as boundaries)."""
    # `$'...'` and `$"..."` are quotes to the shell (ANSI-C and locale strings): read them as quotes.
    text = command.replace("`", " ; ").replace("$'", "'").replace('$"', '"').replace("<(", "< (").replace(">(", "> (")
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _segments(tokens: list[str]) -> list[list[str]]:
    """`tokens` split at command boundaries; redirection operators stay in their segment."""
    out: list[list[str]] = [[]]
    for token in tokens:
        if token in _BOUNDARIES or (set(token) <= set(";&|()\n") and token not in _WRITE_REDIRECTS):
            out.append([])
        else:
            out[-1].append(token)
    return [s for s in out if s]


def _segment(words: list[str], cwd: str, found: Words, depth: int) -> str:
    """Adds one simple command's words to `found`; returns the folder the next command runs in."""
    args: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in _WRITE_REDIRECTS or (word.startswith(">") and set(word) <= set(">|&")):
            if index + 1 < len(words):
                target = words[index + 1]
                found.written.extend((w, cwd) for w in variants(target, cwd))
                _name(target, cwd, found)
                found.indirect = found.indirect or "$" in target
            index += 2
            continue
        if word in ("<", "<<", "<<<"):
            if word == "<" and index + 1 < len(words):
                found.inputs.append((words[index + 1], cwd))
            index += 2
            continue
        args.append(word)
        index += 1
    while args and (args[0] in _SHELL_WORDS or ASSIGNMENT.fullmatch(args[0])):
        if args[0] in ("for", "while", "until"):
            found.loop = True
            if args[0] == "for" and len(args) >= 3 and args[2] == "in":
                for word in args[3:]:
                    _name(word, cwd, found)
                return cwd
        _name(args[0], cwd, found)  # a value set here reaches a write only through `$`, which is indirect
        args = args[1:]
    if not args:
        return cwd
    return _program(args, cwd, found, depth)


def _program(args: list[str], cwd: str, found: Words, depth: int) -> str:
    """Sorts the words of one program and its arguments; returns the next command's folder."""
    program = args[0].rsplit("/", 1)[-1]
    rest = args[1:]
    for word in args:
        _name(word, cwd, found)
    if program in WRAPPERS or program == "env":
        return _wrapper(program, rest, cwd, found, depth)
    if program in INDIRECT_PROGRAMS:
        found.indirect = True
    if program in ("source", ".") or (program in SHELLS and shell_script(rest) is None):
        _script_file(program, rest, cwd, found, depth)
        return cwd
    if program in SHELLS or program == "eval":
        script = shell_script(rest) if program in SHELLS else " ".join(rest)
        try:
            _merge(found, command_words(script or "", cwd, depth + 1))
        except ValueError:
            found.unjudged = f"the script {program} runs cannot be read as shell words"
        return cwd
    if program in ("cd", "pushd"):
        return _cd(rest, cwd, found)
    if program == "popd":
        found.unknown_cwd = True  # the folder it returns to is on a stack the guard does not keep
        return cwd
    if INTERPRETERS.fullmatch(program):
        found.scripted = True
    if program == "git":
        here = option_value(rest, ("-C",))
        if here:
            cwd = posixpath.normpath(posixpath.join(cwd, here))
            rest = [w for i, w in enumerate(rest) if not (w == "-C" or (i and rest[i - 1] == "-C"))]
    if program == "git" or program == "patch":
        _git_or_patch(program, rest, cwd, found)
    _writer(program, rest, cwd, found, depth)
    return cwd


def _wrapper(program: str, rest: list[str], cwd: str, found: Words, depth: int) -> str:
    """A wrapper (WRAPPERS, `env`): the command it runs, in the folder `env -C`/`sudo -D` names,
    and `env -S`'s string read as a command; `xargs` of a program that may write computes its
    targets, and one that changes folders from words it cannot see cannot be judged."""
    inner = after_options(rest, program)
    chdir = {"env": ("-C", "--chdir"), "sudo": ("-D", "--chdir")}.get(program)
    here = option_value(rest, chdir) if chdir else None
    split = option_value(rest, ("-S", "--split-string")) if program == "env" else None
    if split is not None:
        _merge(found, command_words(split, cwd, depth + 1))
    if program == "flock" and inner:
        inner = inner[1:]  # `flock FILE COMMAND`
    name = inner[0].rsplit("/", 1)[-1] if inner else ""
    if program in INDIRECT_PROGRAMS and (not inner or writes(name, inner[1:]) is not None):
        found.indirect = True  # `xargs rm`: its words come from stdin; `xargs grep` only reads
        if name in DESTRUCTIVE or not inner:
            found.unjudged = f"{program} gives {name or 'a command'} words the guard cannot see"
    folder = posixpath.normpath(posixpath.join(cwd, here)) if here else cwd
    return _program(inner, folder, found, depth) if inner else cwd


def _writer(program: str, rest: list[str], cwd: str, found: Words, depth: int) -> None:
    """A program that may write (`_writes` is not None): what it writes for sure, and its words,
    deep for a program that changes what a folder holds (DESTRUCTIVE, a writing git command,
    `find` that deletes), only its destination for a copy."""
    sure = writes(program, rest)
    if sure is None:  # a reader
        return
    found.written.extend((v, cwd) for w in sure for v in variants(w, cwd))
    deep = (
        program in DESTRUCTIVE
        or (program == "git" and git_sub(rest) not in GIT_READERS)
        or (program == "find" and find_destroys(rest))
    )
    kept = found.deep if deep else found.given
    if program == "find":
        _find_commands(rest, cwd, found, depth)
    if program == "git" and deep:
        _git_pathspecs(rest, found)
    words = destination(rest) if program in COPIERS and program != "ln" else [w for w in rest if w != "--"]
    if program == "mv":
        words += destination(rest)  # `mv -tDIR ...`: the folder the files go to
    for word in words:
        kept.extend((v, cwd) for v in variants(word, cwd))
        if any(c in word for c in _SCRIPT_CHARS):
            kept.extend((piece, cwd) for piece in _PIECE.findall(word))
    found.indirect = found.indirect or any("$" in w for w in rest)
    if deep and any("$" in w for w in rest if not w.startswith("-")):
        found.unjudged = f"{program} changes a path the shell computes ($)"
    if program == "ln":
        target = destination(rest)
        folder = posixpath.dirname(posixpath.join(cwd, target[0])) if target else cwd
        found.deep.extend((w, folder) for w in rest if not w.startswith("-"))  # a link's target, from its folder


def _script_file(program: str, rest: list[str], cwd: str, found: Words, depth: int) -> None:
    """A shell reading a script file (`sh FILE`, `source FILE`), or commands from stdin (`bash`,
    `sh -s`): the file is read as commands when it is a regular file of at most MAX_SCRIPT bytes;
    else the command cannot be judged. A shell reading stdin reads here-documents as commands."""
    files = [w for w in rest if not w.startswith("-")]
    if not files:
        found.reads_commands = True
        return
    path = files[0] if posixpath.isabs(files[0]) else posixpath.join(cwd, files[0])
    if posixpath.basename(path) == "activate" and posixpath.basename(posixpath.dirname(path)) == "bin":
        return  # a virtual environment's activation script sets variables only
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_SCRIPT:
            raise OSError
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        found.unjudged = f"{program} runs the script {files[0]}, which the guard cannot read (not there yet?)"
        return
    try:
        _merge(found, command_words(text, cwd, depth + 1))
    except ValueError:
        found.unjudged = f"the script {files[0]} cannot be read as shell words"


def _find_commands(rest: list[str], cwd: str, found: Words, depth: int) -> None:
    """The commands `find -exec/-execdir/-ok/-okdir CMD ... ;` runs, read as commands."""
    for index, word in enumerate(rest):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(index + 1, len(rest)) if rest[j] in (";", "+", "\\;")), len(rest))
            inner = [w for w in rest[index + 1 : end] if w != "{}"]
            if inner:
                _program(inner, cwd, found, depth + 1)


def _git_pathspecs(rest: list[str], found: Words) -> None:
    """A writing git command's pathspec magic (`:/path` from the root, `:(icase)...`): the first
    is read as its root-relative path, the others cannot be judged."""
    for word in rest:
        if word.startswith(":(") or word.startswith(":!") or word.startswith(":^"):
            found.unjudged = f"git pathspec magic {word!r}"
        elif word.startswith(":/"):
            found.deep.append((word[2:] or ".", ""))  # "": the hook resolves it against the root


def variants(word: str, cwd: str) -> list[str]:
    """The paths a shell word may stand for, as far as its text tells: the word itself, with `~`,
    `~+` and `$PWD`/`$HOME` (also in braces) put in, and each `{a,b}` alternative. Raises nothing."""
    text = _substituted(word, cwd)
    return list(dict.fromkeys([word, text, *_braces(text)]))


def _substituted(word: str, cwd: str) -> str:
    """`word` with `~`, `~+`, `$PWD` and `$HOME` put in."""
    home = os.path.expanduser("~")
    text = (
        word.replace("$(pwd)", cwd)
        .replace("${PWD}", cwd)
        .replace("$PWD", cwd)
        .replace("${HOME}", home)
        .replace("$HOME", home)
    )
    if text.startswith("~+"):
        text = cwd + text[2:]
    elif text.startswith("~"):
        text = os.path.expanduser(text)
    return text


def _braces(word: str, limit: int = 64) -> list[str]:
    """The words `{a,b}` brace expansion makes of `word`, breadth first, at most `limit` in all."""
    out: list[str] = []
    pending = [word]
    while pending and len(out) < limit:
        current = pending.pop(0)
        found = _BRACE.search(current)
        if found is None:
            continue
        for choice in found.group(1).split(",")[:limit]:
            expanded = current[: found.start()] + choice + current[found.end() :]
            out.append(expanded)
            pending.append(expanded)
    return out[:limit]


def _git_or_patch(program: str, rest: list[str], cwd: str, found: Words) -> None:
    """Adds what `git apply`/`am`, `patch`, the git subcommands that take a revision's files, and
    `git config` may write (`Words.patches`, `.revisions`, `.git_config`)."""
    words = [w for w in rest if not w.startswith("-")]
    sub = words[0] if program == "git" and words else ""
    if program == "patch" or sub in GIT_PATCHERS:
        files = words if program == "patch" else words[1:]
        found.patches.extend((w, cwd) for w in files)
        found.patches.extend(found.inputs)
        if not files and not found.inputs:
            found.patches.append(("", cwd))  # the patch comes from a pipe: unreadable
        found.patches.extend((w[2:], cwd) for w in rest if w.startswith("-i") and len(w) > 2)
        if "-i" in rest and rest.index("-i") + 1 < len(rest):
            found.patches.append((rest[rest.index("-i") + 1], cwd))
    elif sub in GIT_CHECKOUTS:
        # `git checkout REV -- PATHS`: the paths after `--` are arguments, checked as given.
        before = rest[: rest.index("--")] if "--" in rest else rest
        named = [w for w in before if not w.startswith("-") or w == "-"][1:]
        named = ["@{-1}" if w == "-" else w for w in named if w not in ("pop", "apply", "start", "push", "drop")]
        if sub == "stash" and any(w in rest for w in ("pop", "apply")):
            named = named or ["stash@{0}"]
        found.revisions.extend((w, cwd) for w in named)
        found.revisions.extend((w.split("=", 1)[1], cwd) for w in rest if w.startswith("--source="))
    elif sub == "clean":
        found.deep.append((".", cwd))  # it removes untracked and ignored files anywhere below
    found.git_config = found.git_config or sets_config(sub, words, rest) or skips_hooks(sub, rest)
    found.git_refs = found.git_refs or moves_refs(sub, words, rest)


def _cd(rest: list[str], cwd: str, found: Words) -> str:
    """The folder after `cd ARGS` run in `cwd` (lexically, as the shell does by default)."""
    targets = [w for w in rest if not w.startswith("-") or w == "-"]
    target = _substituted(targets[0], cwd) if targets else os.path.expanduser("~")
    if "$" in target or target.startswith("~") or target == "-":
        found.unknown_cwd = found.indirect = True
        return cwd
    return posixpath.normpath(posixpath.join(cwd, target))


def _name(word: str, cwd: str, found: Words) -> None:
    """Adds `word` and, for a word that is a script or an option with a value, its path-like pieces."""
    found.named.append((word, cwd))
    value = word.split("=", 1)[1] if "=" in word else ""
    if value:
        found.named.append((value, cwd))
    found.named.extend((v, cwd) for v in variants(word, cwd)[1:])
    if any(c in word for c in _SCRIPT_CHARS + "$~"):
        found.named.extend((piece, cwd) for piece in _PIECE.findall(word))


def _merge(found: Words, inner: Words) -> None:
    """Adds what a nested command (`bash -c`, `eval`) found."""
    found.written.extend(inner.written)
    found.given.extend(inner.given)
    found.deep.extend(inner.deep)
    found.named.extend(inner.named)
    found.indirect = found.indirect or inner.indirect
    found.loop = found.loop or inner.loop
    found.patches.extend(inner.patches)
    found.revisions.extend(inner.revisions)
    found.git_config = found.git_config or inner.git_config
    found.git_refs = found.git_refs or inner.git_refs
    found.unjudged = found.unjudged or inner.unjudged
    found.unknown_cwd = found.unknown_cwd or inner.unknown_cwd
    found.scripted = found.scripted or inner.scripted
    found.unknown_cwd = found.unknown_cwd or inner.unknown_cwd
