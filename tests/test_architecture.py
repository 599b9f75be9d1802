"""The architecture the README describes, checked: import-linter's contracts in ``.importlinter``.

Dependencies point one way (experiments → proofs_checks → lipschitz → routing → inference), and
no package imports another package's private modules. The known exceptions are listed in the
contract file itself; these tests make sure the list can only shrink.
"""
import configparser
import pathlib

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


def test_exceptions_only_shrink():
    """The known exceptions (removed when experiments/ is laid out anew) are never added to."""
    parser = _contracts()
    ignored = sum(len(_lines(parser[s].get("ignore_imports", ""))) for s in parser.sections())
    assert ignored <= 7


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
