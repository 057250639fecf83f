#!/usr/bin/env python3
# introspection.py: the Piq typelib exposes documented API and nothing else
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Loads Piq-1.0.typelib with GIRepository and walks every symbol of the Piq
# namespace: functions, constructors, methods, properties, signals, virtual
# methods, enumerations and their values, constants and the error domain. A
# symbol is documented API when the Piq-1.0.gir beside the typelib gives it a
# gi-docgen comment (a <doc> element) taken from a public header or source, and
# nothing from piquant/simd/ or a *-private.h header appears. As graphene's
# tests/introspection.py, in TAP; the plan comes last.
#
# Environment (tests/Makefile.am sets it): GI_TYPELIB_PATH, LD_LIBRARY_PATH;
# PIQ_GIR overrides where the .gir is looked for.

import ctypes
import os
import re
import sys
import traceback
import xml.etree.ElementTree as ET

try:
    import gi
    gi.require_version("GIRepository", "2.0")
    gi.require_version("GLib", "2.0")
    from gi.repository import GIRepository as GIR, GLib  # noqa: E402
except (ImportError, ValueError) as e:
    print("1..0 # SKIP PyGObject or the GIRepository typelib is missing: %s" % e)
    sys.exit(0)

NAMESPACE, VERSION = "Piq", "1.0"
CORE = "{http://www.gtk.org/introspection/core/1.0}"
C_NS = "{http://www.gtk.org/introspection/c/1.0}"
GLIB_NS = "{http://www.gtk.org/introspection/glib/1.0}"

# Identifiers that name implementation details: the kernels, the engine, the
# dispatch and its CPU probing, the thread layer, the C99 compatibility layer,
# anything private. "simd" is public only as the SIMD level.
FORBIDDEN = re.compile(r"kernel|engine|private|dispatch|ifunc|resolver|cpu|parallel|openmp|omp_|"
                       r"intrin|c99|^_", re.IGNORECASE)
SIMD = re.compile(r"simd", re.IGNORECASE)
SIMD_PUBLIC = re.compile(r"simd[-_]?level", re.IGNORECASE)

# The files the GIR may take declarations and docs from: the public headers and
# sources (piquant/Makefile.am's source_h, source_c and the generated enum and
# version files). Nothing under simd/, no *-private.h.
PRIVATE_FILE = re.compile(r"(^|/)simd/|-private\.h$|piq-parallel|c99")

# The old API and internals that must not come back through the typelib.
GONE = {
    "": ["Params", "ParamsClass", "KernelTable", "Kernels", "Engine", "CpuFeatures", "Dispatch",
         "params_get_type", "kernels_get", "engine_run"],
    "Quantizer": ["quantize_blocks_raw", "dequantize_blocks_raw", "requantize_blocks_raw",
                  "compute_params_blocks_raw"],
    "Tensor": ["set_params", "get_params", "set_scales", "set_zero_points"],
}


# ---------------------------------------------------------------- TAP ----

class Failure(Exception):
    pass


CASES = []


def case(name):
    def register(fn):
        CASES.append(("introspection/" + name, fn))
        return fn
    return register


def fail_list(what, items):
    if items:
        lines = ["%d %s:" % (len(items), what)] + ["  " + i for i in sorted(set(str(x) for x in items))[:60]]
        if len(set(str(x) for x in items)) > 60:
            lines.append("  … and %d more" % (len(set(str(x) for x in items)) - 60))
        raise Failure("\n".join(lines))


def main():
    failed = 0
    for i, (name, fn) in enumerate(CASES, 1):
        try:
            fn()
        except Failure as e:
            failed += 1
            print("not ok %d - %s" % (i, name))
            for line in str(e).splitlines():
                print("# " + line)
        except Exception:  # noqa: BLE001  (any failure is a TAP failure)
            failed += 1
            print("not ok %d - %s" % (i, name))
            for line in traceback.format_exc().rstrip().splitlines():
                print("# " + line)
        else:
            print("ok %d - %s" % (i, name))
        sys.stdout.flush()
    print("1..%d" % len(CASES))
    sys.exit(1 if failed else 0)


# ------------------------------------------------------------- typelib ----

def load():
    repo = GIR.Repository.get_default()
    try:
        repo.require(NAMESPACE, VERSION, 0)
    except GLib.Error as e:
        print("Bail out! %s-%s.typelib does not load: %s" % (NAMESPACE, VERSION, e.message))
        sys.exit(1)
    return repo


REPO = load()


def find_gir():
    candidates = []
    if os.environ.get("PIQ_GIR"):
        candidates.append(os.environ["PIQ_GIR"])
    typelib = REPO.get_typelib_path(NAMESPACE)
    if typelib:
        candidates.append(os.path.join(os.path.dirname(typelib), "%s-%s.gir" % (NAMESPACE, VERSION)))
    for d in os.environ.get("GI_TYPELIB_PATH", "").split(os.pathsep):
        if d:
            candidates.append(os.path.join(d, "%s-%s.gir" % (NAMESPACE, VERSION)))
    for c in candidates:
        if os.path.exists(c):
            return c
    print("Bail out! no %s-%s.gir next to %s (set PIQ_GIR)" % (NAMESPACE, VERSION, typelib))
    sys.exit(1)


GIR_PATH = find_gir()


class Symbol:
    """One thing the typelib exposes, with the key that finds its GIR element."""

    def __init__(self, kind, name, key, c_names=()):
        self.kind, self.name, self.key, self.c_names = kind, name, key, [c for c in c_names if c]

    def __repr__(self):
        return "%s %s%s" % (self.kind, self.name, " (%s)" % ", ".join(self.c_names) if self.c_names else "")


def callables(container, infos, kind):
    out = []
    for f in infos:
        sym = GIR.function_info_get_symbol(f)
        flags = GIR.function_info_get_flags(f)
        k = "constructor" if flags & GIR.FunctionInfoFlags.IS_CONSTRUCTOR else \
            "method" if flags & GIR.FunctionInfoFlags.IS_METHOD else kind
        out.append(Symbol(k, "%s.%s" % (container, f.get_name()) if container else f.get_name(),
                          ("callable", sym), [sym]))
    return out


def typelib_symbols():
    """Every symbol of the namespace, as the typelib (and so every binding) sees it."""
    syms = []
    for i in range(REPO.get_n_infos(NAMESPACE)):
        info = REPO.get_info(NAMESPACE, i)
        t = info.get_type()
        name = info.get_name()
        if t == GIR.InfoType.FUNCTION:
            syms += callables("", [info], "function")
        elif t == GIR.InfoType.OBJECT:
            syms.append(Symbol("class", name, ("type", name),
                               [GIR.registered_type_info_get_type_name(info),
                                GIR.registered_type_info_get_type_init(info)]))
            syms += callables(name, [GIR.object_info_get_method(info, j)
                                     for j in range(GIR.object_info_get_n_methods(info))], "function")
            for j in range(GIR.object_info_get_n_properties(info)):
                p = GIR.object_info_get_property(info, j)
                syms.append(Symbol("property", "%s:%s" % (name, p.get_name()),
                                   ("property", name, p.get_name())))
            for j in range(GIR.object_info_get_n_signals(info)):
                s = GIR.object_info_get_signal(info, j)
                syms.append(Symbol("signal", "%s::%s" % (name, s.get_name()), ("signal", name, s.get_name())))
            for j in range(GIR.object_info_get_n_vfuncs(info)):
                v = GIR.object_info_get_vfunc(info, j)
                syms.append(Symbol("virtual method", "%s.%s" % (name, v.get_name()),
                                   ("virtual-method", name, v.get_name())))
            for j in range(GIR.object_info_get_n_constants(info)):
                c = GIR.object_info_get_constant(info, j)
                syms.append(Symbol("constant", "%s.%s" % (name, c.get_name()), ("constant", c.get_name())))
        elif t in (GIR.InfoType.ENUM, GIR.InfoType.FLAGS):
            syms.append(Symbol("enumeration", name, ("type", name),
                               [GIR.registered_type_info_get_type_name(info),
                                GIR.registered_type_info_get_type_init(info)]))
            for j in range(GIR.enum_info_get_n_values(info)):
                v = GIR.enum_info_get_value(info, j)
                syms.append(Symbol("value", "%s.%s" % (name, v.get_name()), ("member", name, v.get_name())))
            syms += callables(name, [GIR.enum_info_get_method(info, j)
                                     for j in range(GIR.enum_info_get_n_methods(info))], "function")
        elif t in (GIR.InfoType.STRUCT, GIR.InfoType.BOXED):
            if t == GIR.InfoType.STRUCT and GIR.struct_info_is_gtype_struct(info):
                continue  # PiqFooClass of G_DECLARE_FINAL_TYPE: no API of its own
            syms.append(Symbol("record", name, ("type", name), [GIR.registered_type_info_get_type_name(info)]))
            if t == GIR.InfoType.STRUCT:
                syms += callables(name, [GIR.struct_info_get_method(info, j)
                                         for j in range(GIR.struct_info_get_n_methods(info))], "function")
                for j in range(GIR.struct_info_get_n_fields(info)):
                    fld = GIR.struct_info_get_field(info, j)
                    syms.append(Symbol("field", "%s.%s" % (name, fld.get_name()), ("field", name, fld.get_name())))
        elif t == GIR.InfoType.CONSTANT:
            syms.append(Symbol("constant", name, ("constant", name)))
        else:  # callbacks, unions, interfaces: none today, documented all the same
            syms.append(Symbol(t.value_nick, name, ("type", name)))
    return syms


SYMBOLS = typelib_symbols()


# ----------------------------------------------------------------- GIR ----

GIR_TREE = ET.parse(GIR_PATH)
GIR_NS = GIR_TREE.getroot().find(CORE + "namespace")

TYPE_TAGS = ("class", "interface", "record", "union", "enumeration", "bitfield", "callback")
CALLABLE_TAGS = ("function", "method", "constructor")


def local(tag):
    return tag.replace(CORE, "").replace(GLIB_NS, "glib:")


def gir_elements():
    """(key, element, parent name) for every element of the namespace that is API."""
    out = []

    def walk(el, parent):
        for ch in el:
            tag = local(ch.tag)
            name = ch.get("name")
            if tag in TYPE_TAGS:
                if ch.get(GLIB_NS + "is-gtype-struct-for"):
                    continue
                out.append((("type", name), ch, parent))
                walk(ch, name)
            elif tag in CALLABLE_TAGS:
                out.append((("callable", ch.get(C_NS + "identifier")), ch, parent))
            elif tag == "virtual-method":
                out.append((("virtual-method", parent, name), ch, parent))
            elif tag == "property":
                out.append((("property", parent, name), ch, parent))
            elif tag == "glib:signal":
                out.append((("signal", parent, name), ch, parent))
            elif tag == "member":
                out.append((("member", parent, name), ch, parent))
            elif tag == "field":
                out.append((("field", parent, name), ch, parent))
            elif tag == "constant":
                out.append((("constant", name), ch, parent))
            elif tag in ("function-macro", "docsection", "alias", "glib:boxed"):
                out.append(((tag, name), ch, parent))

    walk(GIR_NS, "")
    return out


GIR_ELEMENTS = gir_elements()
GIR_BY_KEY = {}
for _key, _el, _parent in GIR_ELEMENTS:
    GIR_BY_KEY.setdefault(_key, []).append(_el)


def has_doc(el):
    d = el.find(CORE + "doc")
    return d is not None and (d.text or "").strip() != ""


def describe(el, parent):
    ident = el.get(C_NS + "identifier") or el.get(C_NS + "type") or ""
    return "%s %s%s%s" % (local(el.tag), parent + "." if parent else "", el.get("name"),
                          " (%s)" % ident if ident else "")


# --------------------------------------------------------------- cases ----

@case("typelib/loads-and-links")
def _():
    lib = REPO.get_shared_library(NAMESPACE)
    if not lib or not re.match(r"libpiquant-1\.0\.so", lib.split(",")[0]):
        raise Failure("shared-library %r is not libpiquant-1.0" % lib)
    if len(SYMBOLS) < 100:
        raise Failure("only %d symbols: is this the Piq typelib?" % len(SYMBOLS))
    # every C function the typelib names is exported by the library
    so = ctypes.CDLL(lib.split(",")[0])
    missing = [s for s in SYMBOLS for c in s.c_names[-1:] if s.key[0] == "callable" and not hasattr(so, c)]
    missing += [c for s in SYMBOLS if s.kind in ("class", "enumeration") for c in s.c_names[1:]
                if not hasattr(so, c)]
    fail_list("symbols of the typelib not exported by %s" % lib, missing)


@case("typelib/every-symbol-documented")
def _():
    undocumented = []
    absent = []
    for s in SYMBOLS:
        els = GIR_BY_KEY.get(s.key)
        if not els:
            absent.append(s)
        elif not any(has_doc(e) for e in els):
            undocumented.append(s)
    fail_list("symbols of the typelib absent from %s (stale .gir?)" % os.path.basename(GIR_PATH), absent)
    fail_list("symbols of the typelib without a doc comment", undocumented)


@case("gir/every-element-documented")
def _():
    bad = []
    for key, el, parent in GIR_ELEMENTS:
        if key[0] == "field" and parent and local(el.tag) == "field" and \
                any(local(t.tag) == "class" for t in GIR_BY_KEY.get(("type", parent), [])):
            continue  # the parent instance of a final class: no public field
        if not has_doc(el):
            bad.append(describe(el, parent))
        if local(el.tag) in CALLABLE_TAGS + ("virtual-method", "glib:signal", "callback"):
            params = el.find(CORE + "parameters")
            for p in (params if params is not None else []):
                if local(p.tag) in ("parameter", "instance-parameter") and not has_doc(p):
                    bad.append("%s: parameter %s" % (describe(el, parent), p.get("name")))
            ret = el.find(CORE + "return-value")
            if ret is not None:
                rtype = ret.find(CORE + "type")
                void = rtype is not None and rtype.get("name") == "none"
                if not void and not has_doc(ret):
                    bad.append("%s: return value" % describe(el, parent))
    fail_list("GIR elements without a doc comment", bad)


@case("gir/public-sources-only")
def _():
    bad = []
    for key, el, parent in GIR_ELEMENTS:
        for tag in ("source-position", "doc"):
            for sub in el.findall(CORE + tag):
                f = sub.get("filename") or ""
                if PRIVATE_FILE.search(f):
                    bad.append("%s: %s from %s" % (describe(el, parent), tag, f))
    fail_list("declarations or docs taken from private files", bad)


@case("typelib/no-internals")
def _():
    bad = []
    names = []
    for s in SYMBOLS:
        names += [(repr(s), n) for n in [s.name.split(".")[-1].split(":")[-1]] + s.c_names]
    for _key, el, parent in GIR_ELEMENTS:
        for attr in ("name", C_NS + "identifier", C_NS + "type", GLIB_NS + "type-name", GLIB_NS + "get-type"):
            if el.get(attr):
                names.append((describe(el, parent), el.get(attr)))
    for what, n in names:
        if FORBIDDEN.search(n) or (SIMD.search(n) and not SIMD_PUBLIC.search(n)):
            bad.append("%s: %s" % (what, n))
    fail_list("implementation details in the typelib or the GIR", bad)


@case("typelib/error-domain")
def _():
    domains = []
    for i in range(REPO.get_n_infos(NAMESPACE)):
        info = REPO.get_info(NAMESPACE, i)
        if info.get_type() == GIR.InfoType.ENUM and GIR.enum_info_get_error_domain(info):
            domains.append((info.get_name(), GIR.enum_info_get_error_domain(info)))
    if domains != [("Error", "piq-error-quark")]:
        raise Failure("error domains %r, expected [('Error', 'piq-error-quark')]" % domains)
    gi.require_version(NAMESPACE, VERSION)
    from gi.repository import Piq
    if GLib.quark_to_string(Piq.Error.quark()) != "piq-error-quark":
        raise Failure("Piq.Error.quark() is %r" % GLib.quark_to_string(Piq.Error.quark()))
    codes = [s for s in SYMBOLS if s.kind == "value" and s.name.startswith("Error.")]
    for want in ("Error.overlap", "Error.no_format", "Error.invalid_scale"):
        if not any(s.name == want for s in codes):
            raise Failure("no %s in the error domain (%r)" % (want, [s.name for s in codes]))
    if any(s.name == "Error.no_params" for s in codes):
        raise Failure("Error.no_params is still there")


@case("python/namespace")
def _():
    gi.require_version(NAMESPACE, VERSION)
    from gi.repository import Piq
    infos = {REPO.get_info(NAMESPACE, i).get_name() for i in range(REPO.get_n_infos(NAMESPACE))}
    extra = [n for n in dir(Piq) if not n.startswith("_") and n not in infos]
    fail_list("names in the Python module that the typelib does not declare (overrides?)", extra)
    present = []
    for container, names in GONE.items():
        obj = getattr(Piq, container) if container else Piq
        for n in names:
            try:
                getattr(obj, n)
            except AttributeError:
                continue
            present.append("%s%s" % (container + "." if container else "Piq.", n))
    fail_list("removed or internal names still reachable", present)


if __name__ == "__main__":
    main()
