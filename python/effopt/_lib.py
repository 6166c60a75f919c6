"""The two shared libraries behind effopt, loaded with ctypes.

libeffopt-compiler.so (include/effopt-c/Compiler.h): the compiler library.
libeffrt.so (runtime/include/effrt/effrt.h): the runtime, loaded RTLD_GLOBAL
so that compiled steps find its kernels (effrt_sgemm, ...).

They are looked up in $EFFOPT_BUILD_DIR/lib, then in the build directory
recorded when the package was installed (_build_dir.py), then in the build/
next to this source tree.
"""
import ctypes
import os

_here = os.path.dirname(os.path.abspath(__file__))


def _candidate_dirs():
    env = os.environ.get("EFFOPT_BUILD_DIR")
    if env:
        yield os.path.join(os.path.abspath(env), "lib")
        return
    try:
        from ._build_dir import BUILD_DIR  # written by setup.py at install
        yield os.path.join(BUILD_DIR, "lib")
    except ImportError:
        pass
    yield os.path.join(_here, "..", "..", "build", "lib")


def _find(name):
    tried = []
    for d in _candidate_dirs():
        path = os.path.normpath(os.path.join(d, name))
        if os.path.exists(path):
            return path
        tried.append(path)
    raise ImportError(
        f"effopt: cannot find {name} (tried {', '.join(tried)}); build effopt "
        "(scripts/build.sh) and set EFFOPT_BUILD_DIR to its build directory")


class _Lib:
    compiler = None
    runtime = None


def compiler():
    if _Lib.compiler is None:
        lib = ctypes.CDLL(_find("libeffopt-compiler.so"))
        lib.effopt_compile.restype = ctypes.c_int
        lib.effopt_compile.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_char_p, ctypes.c_size_t]
        _Lib.compiler = lib
    return _Lib.compiler


def runtime():
    if _Lib.runtime is None:
        lib = ctypes.CDLL(_find("libeffrt.so"), mode=ctypes.RTLD_GLOBAL)
        p, s, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64
        u64p = ctypes.POINTER(ctypes.c_uint64)
        sigs = {
            "effrt_session_open": (p, [s]),
            "effrt_session_close": (None, [p]),
            "effrt_session_set_input": (ctypes.c_int, [p, s, p, ctypes.c_size_t]),
            "effrt_session_step": (ctypes.c_int, [p, ctypes.POINTER(ctypes.c_float)]),
            "effrt_session_save": (ctypes.c_int, [p, s]),
            "effrt_session_save_merged_lora": (ctypes.c_int, [p, s]),
            "effrt_session_load": (ctypes.c_int, [p, s]),
            "effrt_session_step_counter": (i64, [p]),
            "effrt_session_allocated_bytes": (ctypes.c_uint64, [p, u64p, u64p, u64p]),
            "effrt_session_manifest": (s, [p]),
            "effrt_session_read_state": (ctypes.c_int, [p, s, p, ctypes.c_size_t]),
            "effrt_session_write_state": (ctypes.c_int, [p, s, p, ctypes.c_size_t]),
            "effrt_last_error": (s, []),
            "effrt_set_num_threads": (ctypes.c_int, [ctypes.c_int]),
        }
        for name, (res, args) in sigs.items():
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args
        _Lib.runtime = lib
    return _Lib.runtime


def runtime_error(what):
    msg = runtime().effrt_last_error().decode(errors="replace")
    return RuntimeError(f"{what}: {msg}" if msg else what)


def compile_onnx(onnx_path, effx_path, report_prefix, flags):
    """Runs effopt_compile; flags: [(effc flag name, value string)]."""
    lib = compiler()
    n = len(flags)
    names = (ctypes.c_char_p * max(n, 1))(*[k.encode() for k, _ in flags])
    values = (ctypes.c_char_p * max(n, 1))(*[str(v).encode() for _, v in flags])
    err = ctypes.create_string_buffer(4096)
    # ctypes releases the GIL for the call.
    rc = lib.effopt_compile(
        onnx_path.encode(), effx_path.encode() if effx_path else None,
        report_prefix.encode() if report_prefix else None, n, names, values,
        err, len(err))
    if rc != 0:
        raise CompileError(err.value.decode(errors="replace") or "compilation failed")


class CompileError(RuntimeError):
    """The compiler refused the model or the options (one line)."""
