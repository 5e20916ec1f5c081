# Sourced by setup.sh and setup-studio.sh: how uv installs fieldguide's environments.
#
# Hard links from uv's cache (the default cache folder, ~/.cache/uv, or UV_CACHE_DIR): .venv and
# .venv-studio then share one copy of every wheel on disk, torch's included (uv copies instead,
# with a warning, where the cache is on another file system).
export UV_LINK_MODE="${UV_LINK_MODE:-hardlink}"
# llama-cpp-python compiles llama.cpp from source on a fresh machine. fieldguide runs text models
# only, so its multimodal library (mtmd, for image models) is left out of the build.
case " ${CMAKE_ARGS:-} " in
  *" -DLLAVA_BUILD="*) ;;
  *) export CMAKE_ARGS="${CMAKE_ARGS:+$CMAKE_ARGS }-DLLAVA_BUILD=OFF" ;;
esac

# The requirement pyproject.toml states for a package, e.g. `pyproject_requirement torch`.
pyproject_requirement() {
  grep -o "\"$1[=<>!~ ][^\"]*\"" pyproject.toml | head -1 | tr -d '"'
}

# llama-cpp-python has no Linux wheel on PyPI. It is compiled once, into build/wheels/ (one
# folder per requirement), and both environments install that file: uv would otherwise compile
# it again for .venv-studio, as it does not keep a wheel built from a downloaded source archive
# across runs. Prints the wheel's path; $1 is the Python 3.11+ the environments are made from.
# pip runs from an environment of its own (build/wheel-builder, pip alone): pip reads the
# packages of the environment it runs in, and setup.sh installs torch into .venv meanwhile, so
# .venv's pip could read a package uv was still writing and stop on its missing version.
llama_cpp_wheel() {
  local requirement dir builder=build/wheel-builder
  requirement=$(pyproject_requirement llama-cpp-python)
  dir="build/wheels/$(printf '%s' "$requirement" | sha256sum | cut -c1-12)"
  if ! ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    [ -x "$builder/bin/python" ] || "$1" -m venv "$builder" >&2
    "$builder/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$dir" \
      "$requirement" >&2
  fi
  ls -t "$dir"/llama_cpp_python-*.whl | head -1
}
