"""Every URL-valued property key the clients read, found in their own code, never typed by hand.

* **Iceberg** (each release the package supports): the property-name constants of the runtime jar's
  own classes (`org.apache.iceberg.*`, shaded libraries left out), read with the JDK's `javap
  -constants` from the jar `pyspark_catalog_ext.spark.jvm_deps.jars` resolves (the user cache or ~/.m2). A
  `static final String` is a compile-time constant, so its value is in the class file whatever
  code builds it.
* **PyIceberg** (the installed one): module- and class-level string constants of its source, read
  with `ast`.

A constant counts as a property key when its value reads like one (lower-case words joined by `.`,
`-` or `_`: `s3.signer.uri`, `oauth2-server-uri`). It counts as **URL-valued** when a word of its
value, or of the constant's name, names a place to connect to: `uri`, `url`, `endpoint`, `host`,
`hostname` (and the plurals `uris`, `urls`). Why by words: these clients have no type for "a URL
setting" (every property is a string), and their authors name such settings after what they hold
(`S3_SIGNER_URI`, `REFRESH_CREDENTIALS_ENDPOINT`, `GCS_SERVICE_HOST`, `REST_PROXY_HOSTNAME`). The
rule errs on the side of too many keys: a key that is not in fact a URL costs the sweep a few
milliseconds, a missed one would be a leak nobody tested. What it cannot see: a key built at run
time from pieces (a prefix plus a bucket name), and a URL setting named without any of the words.

Names miss settings that hold a place without saying so (`adls.blob-storage-authority`,
`adls.connection-string`), so for PyIceberg the sweep also takes every key **where it is read**
(`pyiceberg_read_keys`): each key-shaped constant of `pyiceberg.io.*` (the FileIOs' settings), and
each key PyIceberg's FileIO and REST catalog code reads from a mapping (`props.get(KEY)`,
`props[KEY]`, `property_as_bool(props, KEY)`, `get_first_property_value(props, KEY, ...)`, KEY a
literal or a constant). Each is valued with its attacker's URL whatever it names: a key that is not
a URL setting costs a run at most. Keys built at run time from a prefix and a name are in
`PREFIX_KEYS`, by hand, for want of anything to read them from.

A host key read together with a port key of the same prefix (`rest.client.proxy.hostname` and
`rest.client.proxy.port`, `hdfs.host` and `hdfs.port`) is injected as that pair: `port_key`; an
authority key with its scheme key (`adls.dfs-storage-authority` + `adls.dfs-storage-scheme`):
`scheme_key`.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

#: The Iceberg releases whose keys the sweep covers (every release the package supports).
ICEBERG_RELEASES = ("1.10.2", "1.11.0", "1.12.0")
#: The ADLS account of the sweep's ADLS tables (tests/leak_stores.py): prefix keys are spelled for it.
ADLS_HOST = "sweepacct.dfs.core.windows.net"
#: Keys a client builds from a prefix and a storage account's host, which no constant spells whole:
#: PyIceberg's and Iceberg's `adls.connection-string.<host>` (the account's endpoint). By hand, since
#: the code holds only the prefix.
PREFIX_KEYS = {"adls.connection-string.": ADLS_HOST}
URL_WORDS = frozenset({"uri", "url", "endpoint", "host", "hostname", "uris", "urls"})
_KEY_SHAPE = re.compile(r"[a-z0-9][a-z0-9._-]*")
_JAVAP_CONSTANT = re.compile(r'static final java\.lang\.String (\w+) = "((?:[^"\\]|\\.)*)";')
_JAVAP_CLASS = re.compile(r"\b(?:class|interface|enum)\s+([\w.$]+)")


@dataclass
class UrlKey:
    """One URL-valued key and where it was found ("Iceberg 1.10.2 org.apache.iceberg.CatalogProperties.URI")."""

    key: str
    sources: list[str] = field(default_factory=list)
    port_key: str | None = None  # a host key's port sibling, injected with it
    scheme_key: str | None = None  # an authority key's scheme sibling ("http"), injected with it

    @property
    def host_only(self) -> bool:
        return self.port_key is not None


def _scheme_sibling(key: str, keys: set[str]) -> str | None:
    """`adls.dfs-storage-scheme` for `adls.dfs-storage-authority`: an authority is host:port, its scheme apart."""
    if not key.endswith("-authority"):
        return None
    sibling = key[:-len("-authority")] + "-scheme"
    return sibling if sibling in keys else None


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[._\-\s]+", text.lower()) if w}


def is_url_valued(key: str, constant: str = "") -> bool:
    return bool((_words(key) | _words(constant)) & URL_WORDS)


def _port_sibling(key: str, keys: set[str]) -> str | None:
    """`rest.client.proxy.port` for `rest.client.proxy.hostname`, `hdfs.port` for `hdfs.host`."""
    match = re.fullmatch(r"(.*[._-])(host|hostname)", key)
    if match is None:
        return None
    sibling = match.group(1) + "port"
    return sibling if sibling in keys else None


def _collect(found: dict[str, UrlKey], constants: list[tuple[str, str, str]]) -> None:
    """`constants`: (where, constant name, value) -> the URL-valued keys among them, into `found`."""
    keys = {value for _, _, value in constants if _KEY_SHAPE.fullmatch(value)}
    for where, name, value in constants:
        if _KEY_SHAPE.fullmatch(value) and is_url_valued(value, name):
            entry = found.setdefault(value, UrlKey(value))
            entry.sources.append(f"{where}.{name}")
            entry.port_key = entry.port_key or _port_sibling(value, keys)


def jdk_tool(name: str) -> str:
    """A JDK tool (`javap`, `javac`, `jar`) beside the `java` Spark would launch, else on PATH."""
    from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java

    return str(check_java().tool(name, purpose="(the sweeps read and build Iceberg's classes with it)"))


def iceberg_runtime_jar(release: str) -> Path:
    """A Spark runtime jar of Iceberg `release` (they share Iceberg's own classes): one already in
    the user cache or ~/.m2 if any, else the one of the first supported stack, fetched."""
    from pyspark_catalog_ext.cache import cache_dir
    from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import DEFAULT_STACK, supported_stacks

    stacks = [s for s in supported_stacks() if s.iceberg == release]
    if not stacks:
        raise ValueError(f"no supported stack has Iceberg {release}")
    for stack in stacks:
        group, artifact, version = stack.runtime.split(":")
        for folder in (cache_dir() / "jars" / "maven",
                       Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact / version):
            if (folder / f"{artifact}-{version}.jar").is_file():
                return folder / f"{artifact}-{version}.jar"
    return resolve_jars(stack=stacks[0] if stacks[0] != DEFAULT_STACK else None)[0]


@functools.cache
def iceberg_constants(release: str) -> tuple[tuple[str, str, str], ...]:
    """(class, constant, value) of every String constant in Iceberg `release`'s own classes, kept
    in the user cache by jar (javap reads ~4,000 classes per jar: seconds, more on a busy machine)."""
    from pyspark_catalog_ext.cache import cache_dir

    jar = iceberg_runtime_jar(release)
    stat = jar.stat()
    cached = cache_dir() / "sweep-constants" / f"{jar.name}-{stat.st_size}-{stat.st_mtime_ns}.json"
    if cached.is_file():
        return tuple(tuple(row) for row in json.loads(cached.read_text(encoding="utf-8")))  # type: ignore[misc]
    out = _javap_constants(release, jar)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text(json.dumps(out), encoding="utf-8")
    tmp.replace(cached)
    return tuple(out)


def _javap_constants(release: str, jar: Path) -> list[tuple[str, str, str]]:
    with zipfile.ZipFile(jar) as zf:
        classes = [n[:-len(".class")].replace("/", ".") for n in zf.namelist()
                   if n.startswith("org/apache/iceberg/") and n.endswith(".class") and "/shaded/" not in n]
    out: list[tuple[str, str, str]] = []
    javap = jdk_tool("javap")
    for start in range(0, len(classes), 1500):  # one JVM per 1,500 classes keeps the command line short
        proc = subprocess.run([javap, "-constants", "-p", "-cp", str(jar), *classes[start:start + 1500]],
                              capture_output=True, text=True, timeout=300, check=True)
        current = ""
        for line in proc.stdout.splitlines():
            if line.endswith("{") and (match := _JAVAP_CLASS.search(line)):
                current = match.group(1)
            elif match := _JAVAP_CONSTANT.search(line):
                out.append((f"Iceberg {release} {current}", match.group(1), match.group(2)))
    return out


@functools.lru_cache(maxsize=1)
def pyiceberg_constants() -> tuple[tuple[str, str, str], ...]:
    """(module, constant, value) of every string constant assigned at any level of PyIceberg's source."""
    import pyiceberg

    root = Path(pyiceberg.__file__).parent
    out: list[tuple[str, str, str]] = []
    for path in sorted(root.rglob("*.py")):
        module = "pyiceberg." + ".".join(path.relative_to(root).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            value = getattr(node, "value", None)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out += [(f"PyIceberg {pyiceberg.__version__} {module}", t.id, value.value) for t in targets if isinstance(t, ast.Name)]
    return tuple(out)


_READERS = frozenset({"get", "pop", "setdefault", "property_as_bool", "property_as_int", "property_as_float",
                      "get_first_property_value"})
#: Where PyIceberg reads its FileIO and REST catalog settings.
_READ_IN = ("io", "catalog/rest", "catalog/__init__.py", "utils/properties.py")


@functools.lru_cache(maxsize=1)
def pyiceberg_read_keys() -> tuple[tuple[str, str], ...]:
    """(where, key) of every key the installed PyIceberg's FileIOs and REST catalog read (see the
    module docstring), from their source with `ast`."""
    import pyiceberg

    root = Path(pyiceberg.__file__).parent
    constants = {name: value for _, name, value in pyiceberg_constants() if _KEY_SHAPE.fullmatch(value)}
    out: list[tuple[str, str]] = []
    paths = [p for part in _READ_IN for p in ([root / part] if part.endswith(".py") else sorted((root / part).rglob("*.py")))]
    for path in paths:
        module = "pyiceberg." + ".".join(path.relative_to(root).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if module.startswith("pyiceberg.io") and isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                value = node.value.value
                if isinstance(value, str) and _KEY_SHAPE.fullmatch(value) and re.fullmatch(r"[a-z].*[.-].*", value):
                    out += [(f"{module} constant", value)]
            for arg in _read_arguments(node):
                key = arg.value if isinstance(arg, ast.Constant) else constants.get(arg.id) if isinstance(arg, ast.Name) else None
                if isinstance(key, str) and _KEY_SHAPE.fullmatch(key):
                    out.append((f"{module} reads", key))
    return tuple(out)


def _is_properties(node: ast.expr) -> bool:
    """`properties`, `self.properties`, `props`, `config`...: a mapping of settings, not any dict."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return bool(re.search(r"(?i)(properties|props|config)$", name))


def _read_arguments(node: ast.AST) -> list[ast.expr]:
    """The key arguments of a read from a mapping of settings: `props.get(K)`, `props[K]`,
    `property_as_bool(props, K)`, `get_first_property_value(props, K1, K2)`."""
    if isinstance(node, ast.Subscript):
        return [node.slice] if _is_properties(node.value) else []
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in _READERS:
        return []
    if name in ("get", "pop", "setdefault"):
        return node.args[:1] if isinstance(func, ast.Attribute) and _is_properties(func.value) else []
    return node.args[1:] if name == "get_first_property_value" else node.args[1:2]


def url_keys(releases: tuple[str, ...] = ICEBERG_RELEASES, pyiceberg_reads: bool = True) -> dict[str, UrlKey]:
    """Every URL-valued key of Iceberg `releases` and the installed PyIceberg, by key; with
    `pyiceberg_reads`, every key PyIceberg's FileIOs and REST catalog read and the `PREFIX_KEYS` too."""
    found: dict[str, UrlKey] = {}
    for release in releases:
        _collect(found, list(iceberg_constants(release)))
    _collect(found, list(pyiceberg_constants()))
    if pyiceberg_reads:
        for where, key in pyiceberg_read_keys():
            found.setdefault(key, UrlKey(key)).sources.append(where)
        for prefix, name in PREFIX_KEYS.items():
            found.setdefault(prefix + name, UrlKey(prefix + name)).sources.append(f"prefix {prefix} (by hand)")
    keys = set(found)
    for entry in found.values():
        entry.port_key = entry.port_key or _port_sibling(entry.key, keys)
        entry.scheme_key = _scheme_sibling(entry.key, keys)
    siblings = {k for e in found.values() for k in (e.port_key, e.scheme_key) if k}
    # A sibling goes in with its key (a port, a scheme), never on its own with a URL.
    return {k: v for k, v in sorted(found.items()) if k not in siblings}
