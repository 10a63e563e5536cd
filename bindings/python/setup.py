"""The C extension mongomq._raw: the SWIG wrapper in generated/ (made by the
repository's scripts/swig-generate.sh python with the project's pinned SWIG and
committed, so building needs no SWIG), compiled against the libmongomq that
pkg-config finds (set PKG_CONFIG_PATH for a library installed under a prefix of your
own)."""

import shlex
import subprocess

from setuptools import Extension, setup

MIN_LIBRARY = "0.8.0"


def pkg_config(*args: str) -> list[str]:
    try:
        out = subprocess.run(
            ["pkg-config", *args, "mongomq"], check=True, capture_output=True, text=True
        ).stdout
    except FileNotFoundError:
        raise SystemExit("mongomq: pkg-config is needed to find libmongomq") from None
    except subprocess.CalledProcessError as e:
        raise SystemExit(
            "mongomq: pkg-config finds no libmongomq >= %s (install it, or set PKG_CONFIG_PATH "
            "to the directory of its mongomq.pc): %s" % (MIN_LIBRARY, e.stderr.strip())
        ) from None
    return shlex.split(out)


pkg_config("--atleast-version=" + MIN_LIBRARY)
cflags = pkg_config("--cflags")
libs = pkg_config("--libs")

setup(
    ext_modules=[
        Extension(
            "mongomq._raw",
            sources=["generated/_raw_wrap.c"],
            include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
            extra_compile_args=[f for f in cflags if not f.startswith("-I")],
            library_dirs=[f[2:] for f in libs if f.startswith("-L")],
            libraries=[f[2:] for f in libs if f.startswith("-l")],
            extra_link_args=[f for f in libs if not f.startswith(("-L", "-l"))],
        )
    ],
)
