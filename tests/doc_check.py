#!/usr/bin/env python3
"""Docs that cannot drift: every file path, function name and setting the
Markdown files and the public header mention in backquotes must exist in the
tree, and every wire version they state must be the code's.

    doc_check.py SOURCE_ROOT

Checked in README.md, docs/*.md, every folder's README.md and
runtime/include/pp.h (its comments):
- a path (a backquoted word with a '/' whose first part is a file or folder
  under the root or the document's own folder): it exists there; build
  outputs (build/...) and installed places (share/...) are not checked;
- a name with the project's prefixes (pp_..., ppd_..., fi_pp..., PP_...):
  found as a word in a source file (C, headers, shell, meson, Lua,
  Python), or, for PP_<KEY>, a configuration key of runtime/config.c;
- "wire version N" / "version N of the wire": N is PP_WIRE_VERSION.
And every source file's stem (C, shell, Python, Lua) is unique in the tree,
but for a .c and its .h in one folder: a name names one file to readers
and tools alike.
Prints each miss as FILE:LINE: what, and exits 1 if there is one."""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
os.chdir(root)
SKIP_DIRS = {".git", "build", "subprojects", "node_modules"}
SRC_EXT = (".c", ".h", ".sh", ".build", ".lua", ".py", ".in", ".txt", ".options", ".map",
           ".service", ".list", ".exclude")

docs, sources = [], []
for d, dirs, files in os.walk("."):
    dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
    for f in files:
        p = os.path.join(d, f)[2:]
        if f.endswith(".md"):
            docs.append(p)
        if f.endswith(SRC_EXT) or f == "meson_options.txt":
            sources.append(p)
docs.append("runtime/include/pp.h")

words = set()
for p in sources:
    try:
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", open(p, errors="replace").read()))
    except OSError:
        pass

keys = set(re.findall(r'\{\{"([a-z0-9_]+)"', open("runtime/config.c").read()))
ver = re.search(r"#define PP_WIRE_VERSION\s+(\d+)", open("proto/wire.h").read()).group(1)

NAME = re.compile(r"^(pp_[a-z0-9_]+|ppd_[a-z0-9_]+|fi_pp[a-z0-9_]*|PP_[A-Z0-9_]+)(\(\))?$")
PATH = re.compile(r"^[A-Za-z0-9_.@-]+(/[A-Za-z0-9_.@-]+)+/?$")
# Where `meson install` puts things, under its prefix: not in the tree.
INSTALLED = ("share/", "lib/", "include/", "bin/", "etc/")
misses = 0


def miss(where, what):
    global misses
    misses += 1
    print(f"{where}: {what}")


for doc in sorted(docs):
    base = os.path.dirname(doc)
    text = open(doc, errors="replace").read()
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{doc}:{n}"
        for m in re.finditer(r"(?:wire|protocol) version (?:is not )?(\d+)|version (\d+) of the wire",
                             line):
            v = m.group(1) or m.group(2)
            if v != ver and "Version" not in line[: m.start()]:
                miss(where, f"says wire version {v}; the code is at {ver} (proto/wire.h)")
        for tok in re.findall(r"`([^`\s]+)`", line):
            tok = tok.rstrip(".,;:")
            nm = NAME.match(tok)
            if nm:
                name = nm.group(1)
                if name in words:
                    continue
                if name.startswith("PP_") and name[3:].lower() in keys:
                    continue
                if name.endswith("_") or name.startswith("PP_<"):
                    continue  # a family: pp_shm_..., PP_...
                miss(where, f"names `{name}`, which no source file has")
            elif PATH.match(tok) and not tok.startswith(INSTALLED + ("build", "../", "./")) \
                    and (os.path.exists(tok.split("/")[0]) or
                         os.path.exists(os.path.join(base, tok.split("/")[0]))):
                cands = [tok, os.path.join(base, tok)]
                if not any(os.path.exists(c) for c in cands):
                    miss(where, f"names `{tok}`, which is not in the tree")
stems = {}
for p in sources:
    if p.endswith((".c", ".h", ".sh", ".py", ".lua")):
        stems.setdefault(os.path.splitext(os.path.basename(p))[0], set()).add(p)
for stem, paths in sorted(stems.items()):
    homes = {os.path.splitext(p)[0] for p in paths}
    if len(homes) > 1:
        miss(" ".join(sorted(paths)), f"share the stem {stem}")
print(f"doc_check: {len(docs)} documents, {len(sources)} sources, {misses} miss(es)")
sys.exit(1 if misses else 0)
