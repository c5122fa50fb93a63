# Install rules and the Debian packages (CPack DEB), included from the root CMakeLists.txt:
#   shardlab-cli  the command line, the example projects and its man page; no Qt, for cluster nodes
#   shardlab      the desktop application with its menu entry, icon, AppStream metainfo, the
#                 *.shardlab.json file type and its man page; depends on shardlab-cli (the
#                 examples, and the headless fallback that runs shardlab-cli)
#   shardlab-cuda the CUDA backend, only where it was built (see "CUDA" below)
# `cpack --config build/CPackConfig.cmake` (or `ninja -C build package`) writes them to build/packages/.
include(GNUInstallDirs)

set(SHARDLAB_APP_ID io.shardlab.Shardlab)
set(SHARDLAB_HOMEPAGE "https://shardlab.example.org" CACHE STRING
    "The project's web site, named in the packages and the AppStream metainfo (its screenshot lives there)")
set(SHARDLAB_MAINTAINER "Shardlab maintainers <maintainers@users.noreply.a-seed-5ae5941f.example>" CACHE STRING
    "The packages' Maintainer field")
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(pkg ${PROJECT_SOURCE_DIR}/packaging)
set(gen ${PROJECT_BINARY_DIR}/packaging)

# Programs and example projects.
install(TARGETS shardlab-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(TARGETS shardlab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gui)
file(GLOB SHARDLAB_EXAMPLE_PROJECTS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/projects/*.shardlab.json)
install(FILES ${SHARDLAB_EXAMPLE_PROJECTS} DESTINATION ${CMAKE_INSTALL_DATADIR}/shardlab/projects COMPONENT cli)
file(GLOB SHARDLAB_HARDWARE_PROFILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/resources/hardware/*.json)
install(FILES ${SHARDLAB_HARDWARE_PROFILES} DESTINATION ${CMAKE_INSTALL_DATADIR}/shardlab/hardware COMPONENT cli)

# Desktop integration.
configure_file(${pkg}/${SHARDLAB_APP_ID}.metainfo.xml.in ${gen}/${SHARDLAB_APP_ID}.metainfo.xml @ONLY)
install(FILES ${pkg}/${SHARDLAB_APP_ID}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT gui)
install(FILES ${pkg}/${SHARDLAB_APP_ID}.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT gui)
install(FILES ${gen}/${SHARDLAB_APP_ID}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo COMPONENT gui)
install(FILES ${pkg}/${SHARDLAB_APP_ID}.mime.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages
        RENAME ${SHARDLAB_APP_ID}.xml COMPONENT gui)

# Debian's copyright and changelog in each package's doc folder; the changelog comes from the
# metainfo's release notes.
foreach(component cli gui cuda)
  if(component STREQUAL cli)
    set(package shardlab-cli)
  elseif(component STREQUAL gui)
    set(package shardlab)
  elseif(TARGET shardlab_backend_cuda)
    set(package shardlab-cuda)
  else()
    continue()
  endif()
  add_custom_command(
    OUTPUT ${gen}/${package}/changelog.gz
    COMMAND ${CMAKE_COMMAND} -DMETAINFO=${gen}/${SHARDLAB_APP_ID}.metainfo.xml -DPACKAGE=shardlab
            "-DMAINTAINER=${SHARDLAB_MAINTAINER}" -DOUT=${gen}/${package}/changelog.gz -P ${pkg}/debian_changelog.cmake
    DEPENDS ${gen}/${SHARDLAB_APP_ID}.metainfo.xml ${pkg}/debian_changelog.cmake
    COMMENT "Debian changelog for ${package}" VERBATIM)
  list(APPEND SHARDLAB_PACKAGE_DOCS ${gen}/${package}/changelog.gz)
  install(FILES ${pkg}/copyright ${gen}/${package}/changelog.gz DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package}
          COMPONENT ${component})
endforeach()

# Man pages from the programs' own --help, at build time, so the options are written once.
# --version-string keeps the build machine's CPU code path (in --version) out of the pages.
find_program(SHARDLAB_HELP2MAN help2man)
find_program(SHARDLAB_GZIP gzip)
if(SHARDLAB_HELP2MAN AND SHARDLAB_GZIP)
  foreach(program shardlab-cli shardlab)
    if(program STREQUAL shardlab-cli)
      set(summary "build, shard, train and inspect neural networks from the command line")
      set(component cli)
    else()
      set(summary "design, shard and train neural networks (desktop application)")
      set(component gui)
    endif()
    add_custom_command(
      OUTPUT ${gen}/man/${program}.1.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${gen}/man
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
              ${SHARDLAB_HELP2MAN} --no-info --section=1 --version-string=${PROJECT_VERSION}
              "--name=${summary}" --output=${gen}/man/${program}.1 $<TARGET_FILE:${program}>
      COMMAND ${SHARDLAB_GZIP} -n -9 -f ${gen}/man/${program}.1
      DEPENDS ${program}
      COMMENT "Man page for ${program} from its --help" VERBATIM)
    list(APPEND SHARDLAB_PACKAGE_DOCS ${gen}/man/${program}.1.gz)
    install(FILES ${gen}/man/${program}.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
  endforeach()
else()
  message(STATUS "Shardlab: no man pages (help2man or gzip not found); the packages will lack them")
endif()
add_custom_target(shardlab_package_docs ALL DEPENDS ${SHARDLAB_PACKAGE_DOCS})

# CUDA: where the CUDA backend module was built (engine/backends/cuda), it becomes the package
# shardlab-cuda, installed where the programs look for it (/usr/bin/../lib/shardlab/backends; a
# folder below /usr/lib/shardlab, so CPack adds no ldconfig call for this private module). It links
# the CUDA runtime statically and opens cuBLASLt at run time, so dpkg-shlibdeps sees only the system
# libraries; cuBLASLt (NVIDIA's package libcublas-MAJOR-MINOR) and the driver's libcuda are declared
# here instead.
set(CPACK_COMPONENTS_ALL cli gui)
if(TARGET shardlab_backend_cuda)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
  install(TARGETS shardlab_backend_cuda LIBRARY DESTINATION lib/shardlab/backends COMPONENT cuda)
  set(SHARDLAB_CUDA_DEBIAN_DEPENDS "libcublas-${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}" CACHE STRING
      "Depends of shardlab-cuda beside shardlab-cli and shlibdeps': the Debian package of cuBLASLt, which the module opens")
  set(SHARDLAB_CUDA_DEBIAN_RECOMMENDS "libcuda1 | cuda-drivers" CACHE STRING
      "Recommends of shardlab-cuda: the NVIDIA driver's libcuda")
endif()
message(STATUS "Shardlab: Debian packages for components ${CPACK_COMPONENTS_ALL}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME shardlab)
set(CPACK_PACKAGE_VENDOR "The Shardlab developers")
set(CPACK_PACKAGE_CONTACT "${SHARDLAB_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${SHARDLAB_HOMEPAGE}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME shardlab-cli)
set(CPACK_COMPONENT_CLI_DESCRIPTION "build, shard, train and inspect neural networks (command line)
shardlab-cli checks a Shardlab project, shows how its arrays split over a
mesh of devices under logical axis rules (the Flax/JAX pjit model), trains
it SPMD on virtual CPU devices, and inspects and exports its checkpoints
(safetensors, ONNX). It needs no display and no Qt, for cluster nodes.
The example projects are in /usr/share/shardlab/projects.")
# The default example trains on Fashion-MNIST from this package.
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "dataset-fashion-mnist")

set(CPACK_DEBIAN_GUI_PACKAGE_NAME shardlab)
# Qt's window-system plugins (xcb, wayland) are only a Recommends of libqt6gui6; without them the
# application cannot open a window.
set(CPACK_DEBIAN_GUI_PACKAGE_DEPENDS "shardlab-cli (= ${PROJECT_VERSION}), qt6-qpa-plugins")
set(CPACK_COMPONENT_GUI_DESCRIPTION "design, shard and train neural networks (desktop application)
Shardlab builds a network from a layer graph, decides how every array is
split over a mesh of devices with logical axis names and rules (the
Flax/JAX pjit model), trains it with live charts, and draws where every
shard lives. Double-clicking a *.shardlab.json project opens it.")

set(CPACK_DEBIAN_CUDA_PACKAGE_NAME shardlab-cuda)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "shardlab-cli (= ${PROJECT_VERSION}), ${SHARDLAB_CUDA_DEBIAN_DEPENDS}")
set(CPACK_DEBIAN_CUDA_PACKAGE_RECOMMENDS "${SHARDLAB_CUDA_DEBIAN_RECOMMENDS}")
set(CPACK_COMPONENT_CUDA_DESCRIPTION "CUDA backend for Shardlab (NVIDIA GPUs)
The CUDA backend lets shardlab-cli and shardlab train on an NVIDIA GPU
(--backend cuda): every virtual device of the mesh runs on the GPU with
its own stream, GEMMs run in cuBLASLt. It needs the NVIDIA driver and
cuBLASLt from NVIDIA's CUDA repository.")

include(CPack)
