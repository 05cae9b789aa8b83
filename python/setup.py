"""Records which libmedtrust.so the package was installed against.

At install, medtrust/_build_info.py gets the library's paths: the build
tree's (../build/libmedtrust.so.0 from `make`, when it exists) and `make
install`'s (PREFIX/lib, PREFIX from $MEDTRUST_PREFIX, default /usr/local).
The package looks there after $MEDTRUST_LIB (medtrust._lib.find_library).
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
SO = "libmedtrust.so.0"


def lib_paths():
    paths = []
    build = os.environ.get("MEDTRUST_BUILD_DIR",
                           os.path.join(os.path.dirname(HERE), "build"))
    if os.path.exists(os.path.join(build, SO)):
        paths.append(os.path.join(os.path.abspath(build), SO))
    prefix = os.environ.get("MEDTRUST_PREFIX", "/usr/local")
    paths.append(os.path.join(prefix, "lib", SO))
    return paths


class BuildPy(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "medtrust", "_build_info.py")
        with open(out, "w") as f:
            f.write('"""Written by setup.py at install."""\n\n')
            f.write("LIBS = %r\n" % (lib_paths(),))


setup(cmdclass={"build_py": BuildPy})
