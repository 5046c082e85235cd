#!/usr/bin/env python3
"""Writes the stand-in's "not supported" entry points from an installed CUDA library.

Every function the installed library exports (its dynamic symbol table, read
with nm) gets a weak definition here; the stand-in's own definitions are
strong and win at link time, so what the stand-in models is its own code and
everything else answers "not supported": the library's documented error code
(cudaErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED, CUPTI_ERROR_NOT_SUPPORTED),
with one line on standard error the first time each is called.

A stub ignores its arguments (the caller owns them under the x86-64 System V
ABI), so only its return type matters. That type is read from the toolkit's
headers (the declaration `RET API_MACRO name(`); a function whose return type
is not the library's error code gets its own type's zero value, and every such
function must be named in EXCEPTIONS with the reason: none is skipped silently.
Functions the headers do not declare at all take their type from NO_PROTOTYPE.

usage: stubs.py cudart|cuda|cupti NM LIBRARY OUTPUT_CPP OUTPUT_LIST HEADER...
  OUTPUT_LIST gets one line per exported function: its name, and either
  `error` or the return type of an exception.
"""
import re
import subprocess
import sys

from generated import write_if_changed

LIBRARIES = {
    # kind: (API macro of the headers, error type, error value, include)
    "cudart": ("CUDARTAPI", "cudaError_t", "cudaErrorNotSupported", "cuda_runtime_api.h"),
    "cuda": ("CUDAAPI", "CUresult", "CUDA_ERROR_NOT_SUPPORTED", "cuda.h"),
    "cupti": ("CUPTIAPI", "CUptiResult", "CUPTI_ERROR_NOT_SUPPORTED", "cupti.h"),
}

# Functions whose return type is not the library's error code: what the stub
# returns, and why that is the "not supported" answer. The stand-in defines
# most of them itself (their stubs are never used); the build fails on a new
# one until it is added here.
EXCEPTIONS = {
    "cudaGetErrorName": "a name; modelled",
    "cudaGetErrorString": "a description; modelled",
    "cudaCreateChannelDesc": "a struct returned by value; modelled",
    "__cudaRegisterFatBinary": "nvcc's module handle; modelled",
    "__cudaRegisterFatBinaryEnd": "void; modelled",
    "__cudaUnregisterFatBinary": "void; modelled",
    "__cudaRegisterFunction": "void; modelled",
    "__cudaRegisterVar": "void; modelled",
    "__cudaRegisterManagedVar": "void; modelled",
    "__cudaInitModule": "char; modelled",
    "__cudaPushCallConfiguration": "unsigned; modelled",
    "InitializeInjectionNvtx": "int, 0: the injection declines NVTX (nvtxInit.h)",
    "InitializeInjectionNvtx2": "int, 0: the injection declines NVTX (nvtxInit.h)",
    "InitializeInjectionNvtxExtension": "int, 0: the injection declines NVTX (nvtxInit.h)",
    "cuptiOpenMpInitialize": "int, the CUPTI error code (Openmp/cupti_openmp.h)",
    "cuptiOpenMpInitialize_v2": "int, the CUPTI error code (Openmp/cupti_openmp.h)",
}

# Exported functions no public header declares (nvcc-internal entry points,
# CUPTI functions left out of its headers): the library's error code, which a
# caller expecting void ignores.
NO_PROTOTYPE = {
    "__cudaGetProcAddress", "__cudaRegisterHostVar", "__cudaRegisterUnifiedTable",
    "InitializeInjectionNvtx", "InitializeInjectionNvtx2", "InitializeInjectionNvtxExtension",
    "cuptiActivityEnableBufferSummary", "cuptiActivityEnableRawTimestamps",
    "cuptiActivityGetNvtxExtPayloadAttr", "cuptiActivityGetNvtxExtPayloadEntryTypeInfo",
    "cuptiDisableLibcuda", "cuptiEnableCigMode", "cuptiGetGlobalCallbackState",
    "cuptiGetNumContexts", "cuptiGetRecommendedBufferSize", "cuptiNvtxExtensionInitialize",
    "cuptiNvtxInitialize", "cuptiNvtxInitialize2", "cuptiOpenACCInitialize", "cuptiStateQuery",
}
NO_PROTOTYPE_TYPE = {n: "int" for n in NO_PROTOTYPE if n.startswith("InitializeInjectionNvtx")}

QUALIFIERS = {"extern", "__host__", "__device__", "__cudart_builtin__", "CUDART_DEPRECATED",
              "__CUDA_DEPRECATED", "static", "inline", '"C"'}


def exported(nm, library):
    out = subprocess.run([nm, "-D", "--defined-only", library], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{library}: nm failed: {out.stderr.strip()}")
    names = set()
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "TW":
            names.add(fields[2].split("@")[0])
    if not names:
        sys.exit(f"{library}: no exported functions")
    return sorted(names)


def declared(headers, api):
    """Return type of every function the headers declare with the API macro,
    and the headers' `#define a b` aliases (cuda.h's versioned names)."""
    types, aliases = {}, {}
    for header in headers:
        text = open(header, encoding="utf-8", errors="replace").read()
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
        for m in re.finditer(r"^\s*#\s*define\s+(\w+)\s+(?:__CUDART_API_\w+\()?(\w+)\)?\s*$",
                             text, re.M):
            aliases.setdefault(m.group(2), m.group(1))
        text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
        for m in re.finditer(r"([A-Za-z_][\w\s\*\"]*?)\s+\b%s\s+(\w+)\s*\(" % api, text):
            words = [w for w in m.group(1).replace("*", " * ").split() if w not in QUALIFIERS]
            types.setdefault(m.group(2), " ".join(words).replace(" *", "*"))
    return types, aliases


def return_type(name, types, aliases):
    base = re.sub(r"_(ptsz|ptds)$", "", name)
    for candidate in (name, base, aliases.get(name), aliases.get(base),
                      re.sub(r"_v\d+$", "", base)):
        if candidate and candidate in types:
            return types[candidate]
    return None


def answer(name, ret, error_type, error_value):
    """What the stub returns, as C++ and in words."""
    if ret == error_type:
        return error_value, error_value
    if ret == "void":
        return None, "nothing"
    if ret.endswith("*"):
        return "nullptr", "a null pointer"
    if name.startswith("InitializeInjectionNvtx"):
        return "0", "0"
    if ret == "int":
        return f"static_cast<int>({error_value})", error_value
    value = ret.removeprefix("struct ")
    return f"{value}{{}}", f"a zero {value}"


def main(kind, nm, library, output, listing, headers):
    api, error_type, error_value, include = LIBRARIES[kind]
    types, aliases = declared(headers, api)
    lines = [f"// Generated by standin/tools/stubs.py from {library.rsplit('/', 1)[-1]}"
             " and the toolkit's headers.",
             '#include "NotSupported.h"', f"#include <{include}>", ""]
    # The runtime keeps an error it returns as the thread's last error
    # (cudaGetLastError), "not supported" included.
    keeps_last_error = kind == "cudart"
    if keeps_last_error:
        lines += ["namespace deepum::standin {", "cudaError_t ret(cudaError_t E);",
                  "} // namespace deepum::standin", ""]
    lines.append("namespace deepum::standin::stubs {")
    listed = []
    for name in exported(nm, library):
        ret = return_type(name, types, aliases)
        if ret is None:
            if name not in NO_PROTOTYPE:
                sys.exit(f"{library}: {name} is exported but no header declares it; "
                         "name it in NO_PROTOTYPE of standin/tools/stubs.py")
            ret = NO_PROTOTYPE_TYPE.get(name, error_type)
        if ret != error_type and name not in EXCEPTIONS:
            sys.exit(f"{library}: {name} returns '{ret}', not {error_type}; "
                     "name it in EXCEPTIONS of standin/tools/stubs.py")
        value, said = answer(name, ret, error_type, error_value)
        listed.append(f"{name} {'error' if ret == error_type else ret}")
        lines.append(f'__attribute__((weak)) {ret} {name}_() __asm__("{name}");')
        lines.append(f"{ret} {name}_() {{")
        lines.append("  static std::atomic<bool> Said{false};")
        lines.append(f'  notSupported(Said, "{name}", "{said}");')
        if value is not None and keeps_last_error and ret == error_type:
            lines.append(f"  return ::deepum::standin::ret({value});")
        elif value is not None:
            lines.append(f"  return {value};")
        lines.append("}")
    lines.append("} // namespace deepum::standin::stubs")
    write_if_changed(output, "\n".join(lines) + "\n")
    write_if_changed(listing, "\n".join(listed) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 7 or sys.argv[1] not in LIBRARIES:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:])
