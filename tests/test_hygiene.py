"""No issue numbers and no paths outside the repository in code, tests or docs.

A docstring or comment cites a paper (and its section) or the repository's own documentation
(``README.md``, ``docs/*.md``, a module's docstring): a reader of the repository has those. An
issue number ("issue 27", "(issue 28, item 1)", ``issue29``) or a file outside the repository
(``../shared/...``, ``/work/...``) points at something the reader does not have.

Files checked: every ``.py``, ``.md``, ``.toml``, ``.yml``, ``.sh`` file and ``Makefile`` that
git lists as tracked or as new and not ignored (``git ls-files --cached --others
--exclude-standard``, so a file not yet committed is checked too), except this file, whose
docstring and patterns must name what they forbid. A file listed but deleted is skipped.

The rules, line by line (``violations``):

1. An issue reference: the regular expression ``ISSUE`` (``[Ii]ssue[s]? ?#?[0-9]+`` or
   ``issue[0-9]+``) anywhere in the line.
2. An absolute path into the workspace: ``/work/``.
3. The sibling folder ``shared/`` named on its own (``shared/VERDICTS.md``, ``shared/papers``):
   the word ``shared/`` not preceded by a letter, digit, ``_``, ``-``, ``.`` or ``/``.
4. A relative path that climbs (``../x``, ``../../x``): it is resolved against the folder of
   the file that names it, and must land inside the repository *and exist there* (a Markdown
   link ``[Checks](../checks.md)`` from ``docs/api/`` does; ``../shared/VERDICTS.md`` from
   ``proofs_checks/`` does not). A ``#anchor`` is dropped before resolving.

The one exception: a test under ``tests/`` may name ``../shared`` (rules 3 and 4; e.g. to read
the papers' text) when the same file skips without it: it contains ``pytest.skip(`` or
``skipif(`` and an existence test (``.exists()``, ``.is_dir()`` or ``.is_file()``). Issue
numbers (rule 1) and ``/work/`` (rule 2) have no exception.

``test_checker_catches_planted_lines`` plants each kind of line in a temporary repository and
runs the same ``violations`` on it, with the allowed neighbour of each rule beside it.
"""

from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SELF = "tests/test_hygiene.py"
SUFFIXES = (".py", ".md", ".toml", ".yml", ".sh")

ISSUE = re.compile(r"[Ii]ssue[s]? ?#?[0-9]+|issue[0-9]+")
WORKSPACE = re.compile(r"/work/")
SHARED = re.compile(r"(?<![\w.\-/])shared/")
CLIMB = re.compile(r"(?:\.\./)+[^\s`'\")\]>,;:]*")
SKIPS = re.compile(r"pytest\.skip\(|skipif\(")
EXISTENCE = re.compile(r"\.(exists|is_dir|is_file)\(\)")


def _checked(name: str) -> bool:
    return name != SELF and (name.endswith(SUFFIXES) or pathlib.PurePosixPath(name).name
                             == "Makefile")


def repository_files(root: pathlib.Path = ROOT) -> list[str]:
    """The repository-relative paths the rules apply to (see the module docstring).

    Raises:
        subprocess.CalledProcessError: ``root`` is not a git working tree.
    """
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=root, check=True, capture_output=True, text=True).stdout
    return sorted({name for name in listed.splitlines()
                   if _checked(name) and (root / name).is_file()})


def _climbs_out(root: pathlib.Path, name: str, target: str) -> bool:
    target = target.split("#", 1)[0]
    resolved = ((root / name).parent / target).resolve()
    inside = resolved == root or root in resolved.parents
    return not (inside and resolved.exists())


def violations(root: pathlib.Path, name: str, text: str) -> list[str]:
    """Every line of ``text`` (the file ``name``, relative to ``root``) that breaks a rule.

    Arguments:
        root: the repository's root folder (``../x`` paths must land inside it).
        name: the file's path relative to ``root``, with ``/`` separators.
        text: the file's contents.

    Returns:
        One ``"name:line: rule: text"`` string per offending line and rule, in line order;
        empty when the file is clean.
    """
    root = root.resolve()
    skips_without_shared = (name.startswith("tests/") and SKIPS.search(text) is not None
                            and EXISTENCE.search(text) is not None)
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{name}:{number}"
        if ISSUE.search(line):
            found.append(f"{where}: issue number: {line.strip()}")
        if WORKSPACE.search(line):
            found.append(f"{where}: path outside the repository: {line.strip()}")
        if SHARED.search(line) and not skips_without_shared:
            found.append(f"{where}: path outside the repository: {line.strip()}")
        for match in CLIMB.finditer(line):
            exempt = skips_without_shared and match.group().lstrip("./").startswith("shared")
            if not exempt and _climbs_out(root, name, match.group()):
                found.append(f"{where}: path outside the repository ({match.group()}): "
                             f"{line.strip()}")
    return found


def test_no_issue_numbers_or_outside_paths_in_the_repository():
    names = repository_files()
    assert len(names) > 50  # the listing worked: the repository has hundreds of such files
    found = [v for name in names
             for v in violations(ROOT, name, (ROOT / name).read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("name", "line", "rule"), [
    ("pkg/mod.py", "network of the same total width (issue 7). Here", "issue number"),
    ("pkg/mod.py", '"""Sweeps on Dask workers (Issue 27, item 4)."""', "issue number"),
    ("pkg/mod.py", "# see issues #12", "issue number"),
    ("tests/test_x.py", "# moved from test_defects_issue29", "issue number"),
    ("docs/guide.md", "The protocol of /work/shared/VERDICTS.md.", "path outside"),
    ("pkg/mod.py", "fixed in code before the run (shared/VERDICTS.md).", "path outside"),
    ("pkg/mod.py", "Source: ``../shared/VERDICTS.md``.", "path outside"),
    ("docs/guide.md", "[Notes](../../notes/plan.md)", "path outside"),
    ("docs/guide.md", "[Missing](../nowhere.md)", "path outside"),
])
def test_checker_catches_planted_lines(tmp_path, name, line, rule):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "README.md").write_text("# planted\n")
    (tmp_path / name).write_text(f"clean line\n{line}\n", encoding="utf-8")
    text = (tmp_path / name).read_text(encoding="utf-8")
    found = violations(tmp_path, name, text)
    assert len(found) == 1 and found[0].startswith(f"{name}:2: {rule}"), found


@pytest.mark.parametrize(("name", "line"), [
    ("pkg/mod.py", "Source: Baykal et al. 2022, §4 (docs/checks.md)."),
    ("pkg/mod.py", "tissue paper, 27 sheets"),  # no digits straight after "issue"
    ("docs/guide.md", "[Readme](../README.md#set-up)"),  # lands inside and exists
    ("pkg/mod.py", "cache = 'runs/quick/shared/x'"),  # a folder of the repository's own
    ("pkg/mod.py", "out = 'runs/my_shared/x'"),
])
def test_checker_passes_the_allowed_neighbours(tmp_path, name, line):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# planted\n")
    assert violations(tmp_path, name, f"{line}\n") == []


_READS_PAPERS = '''PAPERS = pathlib.Path(__file__).parent / "../shared/papers"
{guard}
def test_reads():
    assert "Theorem" in (PAPERS / "baykal.txt").read_text()
'''


@pytest.mark.parametrize(("name", "guard", "allowed"), [
    ("tests/test_papers.py", "pytestmark = pytest.mark.skipif(not PAPERS.is_dir(), reason='')",
     True),
    ("tests/test_papers.py", "", False),  # no skip: it would fail where the folder is absent
    ("tests/test_papers.py", "pytestmark = pytest.mark.skipif(False, reason='')", False),
    ("pkg/papers.py", "pytestmark = pytest.mark.skipif(not PAPERS.is_dir(), reason='')",
     False),  # the exception is for tests only
])
def test_shared_is_allowed_only_in_tests_that_skip_without_it(tmp_path, name, guard, allowed):
    text = _READS_PAPERS.format(guard=guard)
    found = violations(tmp_path, name, text)
    assert (found == []) is allowed, found
    if not allowed:
        assert all("path outside the repository" in v for v in found)
