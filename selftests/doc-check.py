#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""doc-check: the references the documentation makes must resolve.

Usage: selftests/doc-check.py [REPO-ROOT]   (make doc-check; part of make check)

Checks, printing FILE:LINE: PROBLEM for each failure and exiting 1 if any:
 a) section references.  In Markdown (README.md, docs/*.md,
    selftests/README.md): every link [text](target) to a local file must
    name a file that exists, and a #anchor must be the slug of a heading of
    that file (GitHub's rules: lower case, punctuation dropped, spaces to
    hyphens, -1, -2 for repeated headings).  Everywhere (Markdown, man/,
    kernel/, lib/, include/, tools/, selftests/, debian/, rpm/, Makefile,
    Kbuild, dkms.conf): a prose reference to a
    section, written
        FILE.md, "Heading"           (also FILE.md, "Heading", "Other")
        "Heading" in FILE.md
    where FILE.md is a path from the top (docs/design.md), the name of a
    file in docs/ (design.md) or README (README.md), must name a heading
    of FILE.md exactly
    (Markdown markup such as `code` in the heading is ignored).  Inside one
    Markdown file, refer to its own sections with a link: [text](#anchor).
 b) no "issue N" or "stop N" (any case) in docs/, man/, tools/, kernel/,
    lib/, README.md or selftests/README.md.
 c) every path under a directory of the tree (kernel/xpmem_fault.c,
    selftests/vm/run.sh, ...) and every bare source file name
    (xpmem_fault.c, check.sh) named in README.md, docs/ or
    selftests/README.md exists; no FILE:LINE references there.
 d) every xpmem_name() written in README.md, docs/ or selftests/README.md
    is defined (a line starting at column 0 with xpmem_name(, or a
    #define of it) in kernel/, lib/, include/, tools/ or selftests/.
"""

import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..'))
if len(sys.argv) > 1 and sys.argv[1] in ('-h', '--help'):
    print(__doc__)
    sys.exit(0)
if len(sys.argv) > 2 or not os.path.isdir(root):
    sys.exit(__doc__.split('\n\n')[1])
os.chdir(root)

problems = []


def problem(path, lineno, msg):
    problems.append(f'{path}:{lineno}: {msg}')


def tracked():
    try:
        out = subprocess.run(['git', 'ls-files'], capture_output=True,
                             text=True, check=True).stdout.split('\n')
        files = [f for f in out if f and os.path.isfile(f)]
        # files not yet added to git count too
        out = subprocess.run(['git', 'ls-files', '-o', '--exclude-standard'],
                             capture_output=True, text=True).stdout
        files += [f for f in out.split('\n') if f and os.path.isfile(f)]
        return sorted(set(files))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk('.'):
            dirs[:] = [x for x in dirs if x not in ('.git', 'build')]
            files += [os.path.relpath(os.path.join(d, n)) for n in names]
        return sorted(files)


FILES = tracked()
TOPDIRS = sorted({f.split('/')[0] for f in FILES if '/' in f})
BASENAMES = {os.path.basename(f) for f in FILES}


def read_lines(path):
    with open(path, encoding='utf-8', errors='replace') as fh:
        return fh.read().split('\n')


def under(path, *dirs):
    return any(path == d or path.startswith(d.rstrip('/') + '/') for d in dirs)


MD = [f for f in FILES if f.endswith('.md') and
      (f in ('README.md', 'selftests/README.md') or under(f, 'docs'))]

# ------------------------------------------------------------- headings ---


def plain(text):
    """Heading text without Markdown markup."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    return re.sub(r'[`*]', '', text).strip()


def slug(text):
    s = plain(text).lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def md_lines(path):
    """(lineno, line) of a Markdown file outside fenced code blocks."""
    fence = False
    for n, line in enumerate(read_lines(path), 1):
        if re.match(r'\s*(```|~~~)', line):
            fence = not fence
            continue
        if not fence:
            yield n, line


_headings = {}


def headings(path):
    """(set of heading texts, set of anchors) of a Markdown file."""
    if path not in _headings:
        texts, anchors, seen = set(), set(), {}
        for _, line in md_lines(path):
            m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            texts.add(plain(m.group(1)))
            s = slug(m.group(1))
            k = seen.get(s, 0)
            seen[s] = k + 1
            anchors.add(s if k == 0 else f'{s}-{k}')
        _headings[path] = (texts, anchors)
    return _headings[path]


def resolve_doc(name):
    if name == 'README':
        name = 'README.md'
    if '/' in name:
        return name if os.path.isfile(name) else None
    for cand in ('docs/' + name, name):
        if os.path.isfile(cand):
            return cand
    return None


# ------------------------------------------------------- a) references ---

LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
for path in MD:
    for n, line in md_lines(path):
        for m in LINK.finditer(re.sub(r'`[^`]*`', '', line)):
            target = m.group(1)
            if re.match(r'[a-z][a-z0-9+.-]*:', target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition('#')
            dest = path if not file_part else os.path.normpath(
                os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                problem(path, n, f'link to {file_part}: no such file')
                continue
            if anchor:
                if not dest.endswith('.md'):
                    problem(path, n, f'link {target}: an anchor in a file that is not Markdown')
                elif anchor not in headings(dest)[1]:
                    problem(path, n, f'link {target}: no heading of {dest} has the anchor #{anchor}')

DOCNAME = r'((?:[\w.-]+/)*[\w.-]+\.md|\bREADME\b)'
QUOTED = r'"([^"\n]+)"'
REF_FILE_FIRST = re.compile(DOCNAME + r',\s+' + r'((?:' + QUOTED + r'(?:\s*,\s*|\s+and\s+)?)+)')
REF_NAME_FIRST = re.compile(QUOTED + r'\s+in\s+' + DOCNAME)
COMMENT = re.compile(r'^\s*(?:/\*+|\*+/?|//|#+(?!#)|\.\\"|;)?\s?')


def check_ref(path, n, doc, names):
    dest = resolve_doc(doc)
    if dest is None:
        problem(path, n, f'refers to {doc}: no such file')
        return
    texts = headings(dest)[0]
    for name in names:
        name = re.sub(r'\s+', ' ', name)
        if name not in texts:
            problem(path, n, f'refers to {doc}, "{name}": no such heading in {dest}')


REF_DIRS = ('docs', 'man', 'kernel', 'lib', 'include', 'tools', 'selftests')
SRC = [f for f in FILES if (f in ('README.md', 'Makefile', 'Kbuild', 'dkms.conf') or
                            under(f, *REF_DIRS, 'debian', 'rpm')) and
       f != 'selftests/doc-check.py' and not re.search(r'\.(png|svg|gz|xz|o|ko)$', f)]
for path in SRC:
    lines = read_lines(path)
    is_md = path.endswith('.md')
    stripped = [l if is_md else COMMENT.sub('', l, count=1) for l in lines]
    for i, line in enumerate(stripped):
        # a reference may be wrapped onto the next line
        joined = line + ' ' + (stripped[i + 1].strip() if i + 1 < len(stripped) else '')
        if '.md' not in joined and 'README' not in joined:
            continue
        for m in REF_FILE_FIRST.finditer(joined):
            if m.start() < len(line):
                check_ref(path, i + 1, m.group(1), re.findall(QUOTED, m.group(2)))
        for m in REF_NAME_FIRST.finditer(joined):
            if m.start() < len(line):
                check_ref(path, i + 1, m.group(2), [m.group(1)])

# ------------------------------------------------ b) issue and stop numbers ---

NUMBERED = re.compile(r'\b(issue|stop)\s+#?\d+', re.I)
for path in FILES:
    if not (path in ('README.md', 'selftests/README.md') or
            under(path, 'docs', 'man', 'tools', 'kernel', 'lib')):
        continue
    for n, line in enumerate(read_lines(path), 1):
        for m in NUMBERED.finditer(line):
            problem(path, n, f'"{m.group(0)}": say what is true, not which issue or stop it came from')

# ------------------------------------------------------------- c) paths ---

PATH = re.compile(r'(?<![\w/.$-])((?:' + '|'.join(re.escape(d) for d in TOPDIRS) +
                  r')/[\w./+-]*)')
BARE = re.compile(r'(?<![\w/.$<-])([\w+-]+\.(?:c|h|sh|py|config|map|spec))(?![\w/])')
EXTERNAL = {'kselftest_harness.h', 'kselftest.h', 'xpmem.h', 'compat.h'}
for path in MD:
    for n, line in md_lines(path):
        text = re.sub(r'\]\([^)]*\)', ']', line)  # link targets: checked above
        for m in PATH.finditer(text):
            p = m.group(1).rstrip('.')
            nxt = text[m.end():m.end() + 1]
            if nxt in ('*', '{', '<', '['):
                # a pattern: selftests/xpmem_*, build/qemu/<kernel>/...
                prefix = p
                if not any(f.startswith(prefix) for f in FILES):
                    problem(path, n, f'{p}{nxt}...: nothing in the tree starts with {prefix}')
                continue
            if not os.path.exists(p.rstrip('/')) and not os.path.isfile(p + '.c'):
                problem(path, n, f'{p}: no such file or directory')
        for m in BARE.finditer(text):
            name = m.group(1)
            if name not in BASENAMES and name not in EXTERNAL:
                problem(path, n, f'{name}: no file of that name in the tree')
        for m in re.finditer(r'\b[\w/.-]+\.(?:c|h|sh|py|md):\d+', text):
            problem(path, n, f'{m.group(0)}: a line reference; name the function or section instead')

# --------------------------------------------------------- d) functions ---

defined = set()
DEF = re.compile(r'^(?:#\s*define\s+)?(?:[A-Za-z_][\w\s*]*?[\s*])?(xpmem_\w+)\s*\(')
for path in FILES:
    if under(path, 'kernel', 'lib', 'include', 'tools', 'selftests') and \
            re.search(r'\.(c|h)$', path):
        for line in read_lines(path):
            if line[:1].isspace() or line.startswith(('/', '*', ' *')):
                continue
            m = DEF.match(line)
            if m:
                defined.add(m.group(1))
for path in MD:
    for n, line in md_lines(path):
        for m in re.finditer(r'\b(xpmem_\w+)\(\)', line):
            if m.group(1) not in defined:
                problem(path, n, f'{m.group(1)}(): defined nowhere in kernel/, lib/, include/, tools/, selftests/')

for p in problems:
    print('doc-check: ' + p, file=sys.stderr)
if problems:
    print(f'doc-check: {len(problems)} problem(s); usage and rules: selftests/doc-check.py --help',
          file=sys.stderr)
    sys.exit(1)
print(f'doc-check: {len(MD)} Markdown files, {len(SRC)} files scanned for references: OK')
