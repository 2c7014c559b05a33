# The results history (`phasebench history`, docs/history.md). SQLite is required: the history's
# default store is a SQLite file (Debian: libsqlite3-dev). PostgreSQL, for a fleet sharing one
# history, is optional: with libpq (Debian: libpq-dev, found through its pkg-config file) the
# postgresql:// URLs work; without it they are refused with PHASEBENCH_POSTGRESQL_WHY as the reason.
find_package(SQLite3 REQUIRED)
# CMake 4.3's FindSQLite3 names its target SQLite3::SQLite3 and warns on every use of the old
# SQLite::SQLite3; older CMake (3.25 on Debian 12) has only the old name. Use whichever is the
# current one, so configure is quiet on both.
if(TARGET SQLite3::SQLite3)
  set(PHASEBENCH_SQLITE_TARGET SQLite3::SQLite3)
else()
  set(PHASEBENCH_SQLITE_TARGET SQLite::SQLite3)
endif()
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
endif()

# Adds the history's database libraries and the PostgreSQL side that fits them to `target`.
function(phasebench_add_history_backends target)
  target_link_libraries(${target} PUBLIC ${PHASEBENCH_SQLITE_TARGET})
  set(dir ${PROJECT_SOURCE_DIR}/harness/src/history/backends)
  if(LIBPQ_FOUND)
    target_sources(${target} PRIVATE ${dir}/history_postgresql.cpp)
    target_link_libraries(${target} PUBLIC PkgConfig::LIBPQ)
  else()
    target_sources(${target} PRIVATE ${dir}/history_postgresql_absent.cpp)
  endif()
endfunction()

if(LIBPQ_FOUND)
  set(PHASEBENCH_POSTGRESQL_WHY "libpq ${LIBPQ_VERSION}: postgresql:// histories")
else()
  set(PHASEBENCH_POSTGRESQL_WHY "libpq not found (Debian: libpq-dev): postgresql:// histories are refused")
endif()

function(phasebench_print_history_summary)
  message(STATUS "  history     SQLite ${SQLite3_VERSION}; ${PHASEBENCH_POSTGRESQL_WHY}")
  message(STATUS "")
endfunction()
