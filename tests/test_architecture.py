"""The architecture the README describes, checked: import-linter's contracts in ``.importlinter``.

Dependencies point one way (experiments → proofs_checks → lipschitz → routing → inference; inside
experiments, cli → pipeline → papers → analysis → runner → kinds), no module imports a private
module of a package it is not inside, no two modules import each other (directly or in a
cycle, at any depth of the file: imports inside functions count), and the README's tree names
the packages the code has. The contract file lists no exception.
"""
import configparser
import pathlib
import re
import sys

import pytest

importlinter_cli = pytest.importorskip("importlinter.cli")

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONTRACTS = ROOT / ".importlinter"


def _contracts() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(CONTRACTS)
    return parser


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _private_modules(package: str) -> set[str]:
    """Every private module (``_name.py``, not ``__init__``) under ``package``, dotted."""
    found = set()
    for path in (ROOT / package).rglob("_*.py"):
        if path.name == "__init__.py":
            continue
        found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


def test_contracts_are_kept(monkeypatch):
    monkeypatch.chdir(ROOT)
    status = importlinter_cli.lint_imports(config_filename=str(CONTRACTS), no_cache=True,
                                           no_logo=True)
    assert status == importlinter_cli.EXIT_STATUS_SUCCESS


def test_every_private_module_is_forbidden():
    """A private module added later is covered too: the forbidden lists name all of them."""
    parser = _contracts()
    for package, section in (("routing", "importlinter:contract:routing-private"),
                             ("lipschitz", "importlinter:contract:lipschitz-private"),
                             ("inference", "importlinter:contract:inference-private")):
        listed = set(_lines(parser[section]["forbidden_modules"]))
        assert listed == _private_modules(package), section


def test_layers_name_every_package():
    parser = _contracts()
    layers = _lines(parser["importlinter:contract:layers"]["layers"])
    roots = _lines(parser["importlinter"]["root_packages"])
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert set(layers) == set(roots) == packages


def test_contracts_have_no_exceptions():
    """No contract ignores an import: an exception would have to be written here first."""
    parser = _contracts()
    ignored = sum(len(_lines(parser[s].get("ignore_imports", ""))) for s in parser.sections())
    assert ignored == 0


def _graph():
    grimp = pytest.importorskip("grimp")
    return grimp.build_graph(*_lines(_contracts()["importlinter"]["root_packages"]),
                             include_external_packages=False)


def _cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(imports) + 100))
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in imports.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return found


def _imports(graph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def test_no_import_cycles():
    """No module imports itself through others: a cycle hidden in a function-level import
    counts too (grimp reads every import statement of a file)."""
    assert _cycles(_imports(_graph())) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(imports) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _private_imports(imports: dict[str, set[str]]) -> list[str]:
    """Imports of a private module (a ``_name`` part) from outside the package that holds it."""
    found = []
    for source, targets in imports.items():
        for target in targets:
            parts = target.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])
                    if source != owner and not source.startswith(owner + "."):
                        found.append(f"{source} -> {target}")
                    break
    return sorted(found)


def test_no_module_imports_another_packages_private_module():
    assert _private_imports(_imports(_graph())) == []


def test_the_private_import_finder_finds_a_planted_one():
    imports = {"pkg.a": {"pkg._b"}, "other.c": {"pkg._b"}, "pkg.sub.d": {"pkg._b"},
               "pkg.e": {"pkg.sub._f"}}
    assert _private_imports(imports) == ["other.c -> pkg._b", "pkg.e -> pkg.sub._f"]


def _readme_tree() -> dict[str, str]:
    """The README's Architecture tree: package path (``experiments/cli``) -> its sentence."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    tree, parent = {}, None
    for line in block.splitlines():
        match = re.match(r"^( *)([a-z_]+)/\s+(\S.*)$", line)
        if not match:
            continue
        indent, name, sentence = match.groups()
        if indent:
            tree[f"{parent}/{name}"] = sentence
        else:
            parent = name
            tree[name] = sentence
    return tree


def test_the_readme_tree_matches_the_code():
    """Every package and every sub-package of experiments/ is in the README's tree with a
    sentence, and the tree names nothing the code lacks."""
    tree = _readme_tree()
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    subpackages = {f"experiments/{p.parent.name}"
                   for p in (ROOT / "experiments").glob("*/__init__.py")}
    assert set(tree) == packages | subpackages
    assert all(len(sentence.split()) >= 4 for sentence in tree.values())


def test_the_readme_layers_are_the_contract():
    """The order the README states inside experiments/ is the contract's."""
    text = (ROOT / "README.md").read_text().split("## Architecture", 1)[1]
    stated = re.search(r"`cli` → `pipeline`.*?`kinds`", text, re.S).group(0)
    order = re.findall(r"`(\w+)`", stated)
    layers = _lines(_contracts()["importlinter:contract:experiments-layers"]["layers"])
    assert ["experiments." + name for name in order] == layers


def test_a_planted_upward_import_is_caught(tmp_path, monkeypatch):
    """The layers contract fails on a lower package importing a higher one."""
    for name, body in (("high", "VALUE = 1\n"), ("low", "from high import VALUE\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(body)
    config = tmp_path / ".importlinter"
    config.write_text("[importlinter]\nroot_packages =\n    high\n    low\n\n"
                      "[importlinter:contract:layers]\nname = planted\ntype = layers\n"
                      "layers =\n    high\n    low\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    status = importlinter_cli.lint_imports(config_filename=str(config), no_cache=True,
                                           no_logo=True)
    assert status == importlinter_cli.EXIT_STATUS_ERROR


#: A module is at most this many lines; a longer one is one concept, named here with its
#: ceiling (about 15 % above its length when listed): a module that outgrows it is split.
MODULE_LINES = 650
ONE_CONCEPT = {
    "proofs_checks/_framework.py": (1350, "the check framework: verdicts, SVIs, power, MDV, seeds"),
    "proofs_checks/theorem43_dense_lower_bound.py": (1100, "one check: Theorem 4.3's two parts"),
    "routing/_projection.py": (975, "one blocked projection's Numba kernels and their packing"),
    "experiments/kinds/continual_harness.py": (955, "the continual-learning harness (its models "
                                               "join the one router registry next)"),
    "proofs_checks/lemma42_diameter.py": (945, "one check: Lemma 4.2's bucket diameter"),
    "proofs_checks/_nstar.py": (920, "Theorem 4.3's bump family, LP and n* search"),
    "proofs_checks/lemma42_table_size.py": (870, "one check: Lemma 4.2's table size"),
    "proofs_checks/simulations.py": (860, "one check: the routers' simulations"),
    "experiments/kinds/fitting.py": (815, "fitting a top layer: exact ridge and Adam"),
    "routing/layers/_pkm_kernel.py": (815, "one kernel: PKM's forward and backward"),
    "experiments/papers/comet_studies.py": (795, "COMET §5.1's two studies and their claims"),
    "routing/layers/_unit_kernel.py": (770, "one kernel: routed units' forward and backward"),
    "experiments/analysis/scaling.py": (745, "the scaling laws and their bootstrap"),
    "proofs_checks/eq1_flops.py": (745, "one check: Eq. 1's FLOPs"),
    "proofs_checks/theorem41_learner.py": (790, "one check: Theorem 4.1's learner"),
    "proofs_checks/lsh_vs_uniform.py": (885, "one check: LSH against the uniform hash"),
    "routing/bucket_geometry.py": (710, "bucket statistics and their kernels"),
    "experiments/runner/datasets.py": (705, "the image data sets and their files"),
}


def _too_long(lengths: dict[str, int]) -> list[str]:
    return sorted(f"{path}: {n} lines" for path, n in lengths.items()
                  if n > ONE_CONCEPT.get(path, (MODULE_LINES,))[0])


def test_modules_stay_short_or_are_one_named_concept():
    lengths = {}
    for package in _lines(_contracts()["importlinter"]["root_packages"]):
        for path in (ROOT / package).rglob("*.py"):
            lengths[path.relative_to(ROOT).as_posix()] = len(path.read_text().splitlines())
    assert _too_long(lengths) == []
    assert set(ONE_CONCEPT) <= set(lengths)  # a listed module that left is taken off the list


def test_the_length_rule_names_a_long_module():
    assert _too_long({"experiments/x.py": MODULE_LINES + 1, "experiments/y.py": 10}) == [
        f"experiments/x.py: {MODULE_LINES + 1} lines"]
    assert _too_long({"proofs_checks/_framework.py": 1300}) == []
