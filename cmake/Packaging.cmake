# Installation layout and the Debian package (cpack -G DEB in a build dir).
# The agent runs as a systemd service; its default config is a conffile.
include(GNUInstallDirs)

install(TARGETS envcontractd fleetctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB SHIPPED_CONTRACTS ${PROJECT_SOURCE_DIR}/contracts/platforms/*.yaml)
install(FILES ${SHIPPED_CONTRACTS} DESTINATION ${CMAKE_INSTALL_DATADIR}/envcontract/contracts)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/prometheus/envcontract-rules.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/envcontract/prometheus)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/ci/github-job-started.sh
        DESTINATION ${CMAKE_INSTALL_DATADIR}/envcontract/ci)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/envcontractd.service
              ${PROJECT_SOURCE_DIR}/packaging/envcontract-fleet.service
        DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/agent.yaml ${PROJECT_SOURCE_DIR}/packaging/fleet.env
        DESTINATION /etc/envcontract)
install(FILES
          ${PROJECT_SOURCE_DIR}/docs/agent.md
          ${PROJECT_SOURCE_DIR}/docs/api.md
          ${PROJECT_SOURCE_DIR}/docs/ci.md
          ${PROJECT_SOURCE_DIR}/docs/containers.md
          ${PROJECT_SOURCE_DIR}/docs/contracts.md
          ${PROJECT_SOURCE_DIR}/docs/deploy.md
          ${PROJECT_SOURCE_DIR}/docs/fleet.md
          ${PROJECT_SOURCE_DIR}/docs/fleetctl.md
          ${PROJECT_SOURCE_DIR}/docs/performance.md
          ${PROJECT_SOURCE_DIR}/docs/plan.schema.json
          ${PROJECT_SOURCE_DIR}/docs/probes.md
          ${PROJECT_SOURCE_DIR}/docs/provisioning.md
          ${PROJECT_SOURCE_DIR}/docs/reliability.md
          ${PROJECT_SOURCE_DIR}/docs/report.md
          ${PROJECT_SOURCE_DIR}/docs/report.schema.json
          ${PROJECT_SOURCE_DIR}/docs/security.md
          ${PROJECT_SOURCE_DIR}/packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/examples/envcontractd-nsenter.conf
              ${PROJECT_SOURCE_DIR}/packaging/examples/envcontractd-podman.conf
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# A native package: Debian wants its changelog as changelog.gz, compressed, at maximum compression and without
# a timestamp, so the package is reproducible.
set(PACKAGE_CHANGELOG ${CMAKE_CURRENT_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${PACKAGE_CHANGELOG}
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/changelog > ${PACKAGE_CHANGELOG}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog)
add_custom_target(package_changelog ALL DEPENDS ${PACKAGE_CHANGELOG})
install(FILES ${PACKAGE_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Man pages made from the tools' own --help texts (packaging/manpage.sh), dated
# by the changelog's last entry so that the package is reproducible.
file(STRINGS ${PROJECT_SOURCE_DIR}/packaging/changelog CHANGELOG_SIGNATURE REGEX "^ -- " LIMIT_COUNT 1)
string(REGEX MATCH "([0-9]+) ([A-Z][a-z][a-z]) ([0-9][0-9][0-9][0-9])" _ "${CHANGELOG_SIGNATURE}")
set(MONTHS Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec)
list(FIND MONTHS "${CMAKE_MATCH_2}" MONTH_INDEX)
math(EXPR MONTH "${MONTH_INDEX} + 1")
string(LENGTH "${CMAKE_MATCH_1}" DAY_LENGTH)
set(DAY "${CMAKE_MATCH_1}")
if(DAY_LENGTH EQUAL 1)
  set(DAY "0${DAY}")
endif()
if(MONTH LESS 10)
  set(MONTH "0${MONTH}")
endif()
set(MAN_DATE "${CMAKE_MATCH_3}-${MONTH}-${DAY}")
foreach(tool envcontractd fleetctl)
  set(page ${CMAKE_CURRENT_BINARY_DIR}/${tool}.1.gz)
  add_custom_command(OUTPUT ${page}
    COMMAND sh ${PROJECT_SOURCE_DIR}/packaging/manpage.sh $<TARGET_FILE:${tool}> ${tool} ${MAN_DATE}
            ${PROJECT_VERSION} > ${CMAKE_CURRENT_BINARY_DIR}/${tool}.1
    COMMAND gzip -9nf ${CMAKE_CURRENT_BINARY_DIR}/${tool}.1
    DEPENDS ${tool} ${PROJECT_SOURCE_DIR}/packaging/manpage.sh
    COMMENT "Man page of ${tool}")
  list(APPEND MAN_PAGES ${page})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${MAN_PAGES})
install(FILES ${MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME envcontract)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "envcontract maintainers <maintainers@envcontract.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "keeps an ML accelerator fleet's Python environments honest to their contracts")
# One string: set() with several would join them with ';', which would start
# every line of the package's Description (tests/packaging/check_deb.sh).
set(CPACK_PACKAGE_DESCRIPTION
    "envcontractd discovers every conda env and venv on a host, probes each one in
isolated subprocesses, judges the facts against the accelerator platform's
contract and serves drift reports with their causes over HTTP (JSON API,
dashboard, Prometheus metrics). fleetctl asks agents across a fleet.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "elfutils")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm
    ${PROJECT_SOURCE_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
