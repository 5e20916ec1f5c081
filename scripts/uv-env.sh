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
