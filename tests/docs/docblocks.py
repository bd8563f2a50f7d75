#!/usr/bin/python3
"""The command blocks of colloc's markdown, as tests (tests/docs/test_docs.sh).

A block is marked by an HTML comment right before its fence (GitHub and
other renderers do not show it):

    <!-- test: run
    daemon: 2x8GiB --set oom_max_attempts=2
    setup: colloc submit --mem 1GiB true
    expect: ^submitted job [0-9]+$
    keys: ^(peak|fits)
    status: 1
    timeout: 30
    -->
    ```console
    $ colloc ...
    ```

or, for a block that the test does not run, `<!-- test: not run: WHY -->`.

The block is the script: a block whose lines start with `$ ` is a
transcript (the `$ ` lines, with their `\\` continuation lines, are run; the
other lines are what the reader is shown), any other block is run as it is,
under `set -e`. Directives, each optional and `expect`, `keys`, `setup`
repeatable:

  daemon   collocd on simulated GPUs of this spec (and further collocd
           options) on a socket of the block's own, in COLLOC_SOCKET
  setup    a command run first, in the same directory (its output is not
           compared; set -e)
  expect   a Python regex that some line of the output (stdout and stderr
           together) must match
  keys     a regex selecting the shown lines of a transcript that must each
           appear in the output (spaces compared loosely); `.` selects them
           all. Shown lines holding `...` are elisions, never keys
  status   the script's exit status (default 0; a transcript's is its last
           command's)
  timeout  seconds (default 30)

In README.md every sh or console block, and every block that starts with
`$ `, must carry a marker, run or not run, so that no new example is left
unchecked by accident.

  docblocks.py extract OUTDIR FILE...    one directory per marked block and
                                         OUTDIR/index (DIR|WHERE|DAEMON)
  docblocks.py run BLOCKDIR WORKDIR      run one block there, compare; exit 1
                                         with FAIL lines on a mismatch
  docblocks.py links ROOT FILE...        relative links name files in ROOT
  docblocks.py selftest                  the comparison catches changes

Nothing here is colloc-specific but the path rewrite of `run`: `/tmp/colloc`
in a block becomes WORKDIR/colloc, so that examples which start their own
collocd do it in the test's directory.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

DIRECTIVES = ("daemon", "setup", "expect", "keys", "status", "timeout")
MUST_MARK = ("README.md",)


class DocError(Exception):
    pass


def parse_marker(text, where):
    """The directives of a `<!-- test: ... -->` comment's text."""
    lines = text.strip().splitlines()
    head = lines[0].strip()
    m = re.match(r"test:\s*(.*)$", head)
    if not m:
        raise DocError(f"{where}: a test marker starts with 'test:'")
    mode = m.group(1).strip()
    meta = {"mode": mode, "setup": [], "expect": [], "keys": [], "status": 0,
            "timeout": 30, "daemon": ""}
    if mode.startswith("not run"):
        if not re.match(r"not run:\s*\S", mode):
            raise DocError(f"{where}: 'test: not run: WHY' says why")
        return meta
    if mode != "run":
        raise DocError(f"{where}: 'test: {mode}': expected 'run' or 'not run: WHY'")
    for raw in lines[1:]:
        line = raw.strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in DIRECTIVES:
            raise DocError(f"{where}: unknown test directive '{line}'")
        if key in ("setup", "expect", "keys"):
            if key != "setup":
                try:
                    re.compile(value)
                except re.error as e:
                    raise DocError(f"{where}: {key}: bad regex '{value}': {e}")
            meta[key].append(value)
        elif key in ("status", "timeout"):
            if not value.isdigit():
                raise DocError(f"{where}: {key}: expected a number, not '{value}'")
            meta[key] = int(value)
        else:
            meta[key] = value
    return meta


def blocks(path):
    """(line, lang, body lines, marker meta or None, marker line) of each fence."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    marker = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("<!--") and re.match(r"\s*<!--\s*test:", line):
            start = i
            text = line.split("<!--", 1)[1]
            while "-->" not in text:
                i += 1
                if i >= len(lines):
                    raise DocError(f"{path}:{start + 1}: test marker without -->")
                text += "\n" + lines[i]
            text = text.split("-->", 1)[0]
            if marker:
                raise DocError(f"{path}:{marker[1]}: test marker without a block")
            marker = (parse_marker(text, f"{path}:{start + 1}"), start + 1)
            i += 1
            continue
        m = re.match(r"^(\s*)```\s*([A-Za-z0-9_-]*)\s*$", line)
        if m:
            indent, lang = m.group(1), m.group(2)
            body = []
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
                j += 1
            out.append((i + 1, lang, body, marker[0] if marker else None,
                        marker[1] if marker else 0))
            marker = None
            i = j + 1
            continue
        if marker and line.strip():
            raise DocError(f"{path}:{marker[1]}: test marker not right before a ``` block")
        i += 1
    if marker:
        raise DocError(f"{path}:{marker[1]}: test marker without a block")
    return out


def is_transcript(body):
    return any(l.startswith("$ ") for l in body)


def split_transcript(body):
    """(script lines, shown lines) of a transcript."""
    script, shown = [], []
    cont = False
    for l in body:
        if cont:
            script.append(l)
            cont = l.rstrip().endswith("\\")
        elif l.startswith("$ "):
            script.append(l[2:])
            cont = l.rstrip().endswith("\\")
        else:
            shown.append(l)
    return script, shown


def cmd_extract(outdir, files):
    index = []
    n = 0
    for path in files:
        for line, lang, body, meta, mline in blocks(path):
            where = f"{path}:{line}"
            wants_mark = lang in ("sh", "console") or is_transcript(body)
            if meta is None:
                if os.path.basename(path) in MUST_MARK and wants_mark:
                    raise DocError(f"{where}: a {lang or 'command'} block without a test "
                                   "marker (<!-- test: run ... --> or <!-- test: not run: WHY -->)")
                continue
            if meta["mode"] != "run":
                continue
            n += 1
            d = os.path.join(outdir, f"b{n}")
            os.makedirs(d)
            if is_transcript(body):
                script, shown = split_transcript(body)
                prelude = ""
            else:
                if meta["keys"]:
                    raise DocError(f"{where}: 'keys' needs a transcript ($ lines)")
                script, shown = body, []
                prelude = "set -e\n"
            if not "".join(script).strip():
                raise DocError(f"{where}: nothing to run")
            with open(os.path.join(d, "script.sh"), "w") as f:
                f.write(prelude + "\n".join(script) + "\n")
            with open(os.path.join(d, "setup.sh"), "w") as f:
                f.write("set -e\n" + "".join(s + "\n" for s in meta["setup"]))
            meta["where"] = where
            meta["shown"] = shown
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump(meta, f, indent=1)
            index.append(f"{d}|{where}|{meta['daemon']}")
    with open(os.path.join(outdir, "index"), "w") as f:
        f.write("".join(x + "\n" for x in index))
    return 0


def loose(s):
    return " ".join(s.split())


def compare(meta, status, output):
    """FAIL messages for output (a str) against the block's meta."""
    where = meta["where"]
    fails = []
    lines = output.split("\n")
    if status != meta["status"]:
        fails.append(f"{where}: exit status {status}, expected {meta['status']}")
    for rx in meta["expect"]:
        r = re.compile(rx)
        if not any(r.search(l) for l in lines):
            fails.append(f"{where}: no output line matches /{rx}/")
    have = {loose(l) for l in lines}
    for rx in meta["keys"]:
        r = re.compile(rx)
        picked = [l for l in meta["shown"] if "..." not in l and r.search(l)]
        if not picked:
            fails.append(f"{where}: keys /{rx}/ select no shown line")
        for l in picked:
            if loose(l) not in have:
                fails.append(f"{where}: shown line not in the output: '{l.strip()}'")
    return fails


def run_group(argv, cwd, env, timeout, out):
    """Run argv in a session of its own; stop what it leaves behind (the
    collocd a block starts with `&`). Returns the exit status (124 on a
    timeout)."""
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        status = 124
    for sig, pause in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        end = time.monotonic() + pause
        while time.monotonic() < end:
            try:
                os.killpg(p.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
    if p.poll() is None:
        p.wait()
    return status


def cmd_run(bdir, work):
    with open(os.path.join(bdir, "meta.json")) as f:
        meta = json.load(f)
    env = dict(os.environ)
    for name in ("setup.sh", "script.sh"):
        with open(os.path.join(bdir, name)) as f:
            text = f.read().replace("/tmp/colloc", os.path.join(work, "colloc"))
        with open(os.path.join(work, ".docs-" + name), "w") as f:
            f.write(text)
    log = os.path.join(bdir, "out")
    with open(os.path.join(bdir, "setup.out"), "w") as out:
        st = run_group(["sh", ".docs-setup.sh"], work, env, meta["timeout"], out)
    if st != 0:
        print(f"FAIL {meta['where']}: setup exit status {st}")
        with open(os.path.join(bdir, "setup.out")) as f:
            for l in f.read().splitlines()[-5:]:
                print("  | " + l)
        return 1
    with open(log, "w") as out:
        st = run_group(["sh", ".docs-script.sh"], work, env, meta["timeout"], out)
    with open(log, errors="replace") as f:
        output = f.read()
    fails = compare(meta, st, output)
    for msg in fails:
        print("FAIL " + msg)
    if fails:
        for l in output.splitlines()[-8:]:
            print("  | " + l)
    return 1 if fails else 0


def cmd_links(root, files):
    """Every relative markdown link resolves to a file in the repository."""
    root = os.path.realpath(root)
    bad = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # Code spans and blocks are not links.
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            file_part = target.split("#", 1)[0]
            full = os.path.realpath(os.path.join(os.path.dirname(path), file_part))
            if not full.startswith(root + os.sep) or not os.path.exists(full):
                print(f"FAIL {path}: link to '{target}' does not name a file of the repository")
                bad += 1
    return 1 if bad else 0


def cmd_selftest():
    """The comparison catches a changed line, a missing pattern, a status."""
    meta = {"where": "self", "status": 0, "expect": [r"^submitted job \d+$"],
            "keys": ["^peak"], "shown": ["peak device     6.44 GiB  (reserved)",
                                         "peak at ..."]}
    good = "submitted job 3\npeak device 6.44 GiB (reserved)\n"
    want = [
        (0, good, 0),
        (0, good.replace("6.44", "6.45"), 1),
        (0, good.replace("submitted", "queued"), 1),
        (1, good, 1),
    ]
    bad = 0
    for status, output, nfails in want:
        got = len(compare(meta, status, output))
        if got != nfails:
            print(f"FAIL selftest: {got} failure(s) for {output!r} (status {status}), "
                  f"expected {nfails}")
            bad += 1
    return 1 if bad else 0


def main(argv):
    try:
        if len(argv) >= 3 and argv[1] == "extract":
            return cmd_extract(argv[2], argv[3:])
        if len(argv) == 4 and argv[1] == "run":
            return cmd_run(argv[2], argv[3])
        if len(argv) >= 3 and argv[1] == "links":
            return cmd_links(argv[2], argv[3:])
        if len(argv) == 2 and argv[1] == "selftest":
            return cmd_selftest()
    except DocError as e:
        print(f"FAIL {e}")
        return 1
    print("usage: docblocks.py extract OUTDIR FILE... | run BLOCKDIR WORKDIR | "
          "links ROOT FILE... | selftest", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
