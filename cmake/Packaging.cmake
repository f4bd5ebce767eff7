# Installation layout and the Debian package (cpack -G DEB in a build dir).
# The agent runs as a systemd service; its default config is a conffile.
include(GNUInstallDirs)

install(TARGETS envcontractd fleetctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB SHIPPED_CONTRACTS ${PROJECT_SOURCE_DIR}/contracts/platforms/*.yaml)
install(FILES ${SHIPPED_CONTRACTS} DESTINATION ${CMAKE_INSTALL_DATADIR}/envcontract/contracts)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/envcontractd.service
        DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/agent.yaml DESTINATION /etc/envcontract)
install(FILES
          ${PROJECT_SOURCE_DIR}/docs/agent.md
          ${PROJECT_SOURCE_DIR}/docs/api.md
          ${PROJECT_SOURCE_DIR}/docs/contracts.md
          ${PROJECT_SOURCE_DIR}/docs/fleetctl.md
          ${PROJECT_SOURCE_DIR}/docs/report.md
          ${PROJECT_SOURCE_DIR}/docs/report.schema.json
          ${PROJECT_SOURCE_DIR}/docs/security.md
          ${PROJECT_SOURCE_DIR}/packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# A native package: Debian wants its changelog as changelog.gz, compressed, at maximum compression and without
# a timestamp, so the package is reproducible.
set(PACKAGE_CHANGELOG ${CMAKE_CURRENT_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${PACKAGE_CHANGELOG}
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/changelog > ${PACKAGE_CHANGELOG}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog)
add_custom_target(package_changelog ALL DEPENDS ${PACKAGE_CHANGELOG})
install(FILES ${PACKAGE_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME envcontract)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "envcontract maintainers <maintainers@envcontract.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "keeps an ML accelerator fleet's Python environments honest to their contracts")
set(CPACK_PACKAGE_DESCRIPTION
    "envcontractd discovers every conda env and venv on a host, probes each one in\n"
    "isolated subprocesses, judges the facts against the accelerator platform's\n"
    "contract and serves drift reports with their causes over HTTP (JSON API,\n"
    "dashboard, Prometheus metrics). fleetctl asks agents across a fleet.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "elfutils")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/postrm
    ${PROJECT_SOURCE_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
