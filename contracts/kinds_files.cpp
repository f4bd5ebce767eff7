// Check kinds about files on disk: paths, shared libraries, linkage, device nodes.
#include "contracts/kinds.hpp"

#include <algorithm>

#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {
namespace {

using namespace kind_helpers;

void reject_overlap(MappingReader& reader, const Strings& first_items, std::string_view first,
                    const Strings& second_items, std::string_view second) {
  for (const auto& item : first_items) {
    if (std::find(second_items.begin(), second_items.end(), item) != second_items.end()) {
      reader.ctx().error(*reader.get(second), "'" + item + "' is in both '" + std::string(first) +
                                                  "' and '" + std::string(second) + "' of " +
                                                  reader.what());
    }
  }
}

}  // namespace

FilesParams parse_files(MappingReader& reader, const KindContext&) {
  FilesParams params;
  require_one_of(reader, {"exist", "absent"});
  read_path_patterns(reader, "exist", params.exist);
  read_path_patterns(reader, "absent", params.absent);
  reject_overlap(reader, params.exist, "exist", params.absent, "absent");
  return params;
}

LibrariesParams parse_libraries(MappingReader& reader, const KindContext&) {
  LibrariesParams params;
  require_one_of(reader, {"present", "absent"});
  read_names(reader, "present", params.present, is_file_name,
             "a library file name such as 'libbkcl.so'");
  read_names(reader, "absent", params.absent, is_file_name,
             "a library file name such as 'libbkcl.so'");
  reject_overlap(reader, params.present, "present", params.absent, "absent");
  return params;
}

LinkageParams parse_linkage(MappingReader& reader, const KindContext&) {
  LinkageParams params;
  read_path_pattern(reader, "library", params.library, Need::required);
  require_one_of(reader, {"must_not_need", "must_need"});
  read_names(reader, "must_not_need", params.must_not_need, is_file_name, "a library file name");
  read_names(reader, "must_need", params.must_need, is_file_name, "a library file name");
  reject_overlap(reader, params.must_need, "must_need", params.must_not_need, "must_not_need");
  // Through the closure by default: libtorch_fl.so reaching libtorch_cuda.so
  // via a dependency is the same problem as needing it directly.
  params.transitive = reader.boolean("transitive").value_or(true);
  return params;
}

DeviceNodesParams parse_device_nodes(MappingReader& reader, const KindContext&) {
  DeviceNodesParams params;
  const auto glob = reader.string("glob", Need::required);
  if (glob) {
    if (glob->starts_with("/dev/")) {
      params.glob = *glob;
    } else {
      reader.ctx().error(
          *reader.get("glob"),
          "'glob' of " + reader.what() + " must be a path under /dev/, got '" + *glob + "'");
    }
  }
  read_count(reader, "count", params.count, Need::optional);
  return params;
}

}  // namespace envcontract::contracts::kinds
