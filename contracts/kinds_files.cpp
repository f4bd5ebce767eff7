// Check kinds about files on disk: paths, shared libraries, linkage, device nodes.
#include "contracts/kinds.hpp"

#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {
namespace {

using namespace kind_helpers;

void reject_overlap(MappingReader& reader, const Json& params, std::string_view first,
                    std::string_view second) {
  for (const auto& item : params[std::string(first)]) {
    for (const auto& other : params[std::string(second)]) {
      if (item == other) {
        reader.ctx().error(*reader.get(second), "'" + item.get<std::string>() + "' is in both '" +
                                                    std::string(first) + "' and '" +
                                                    std::string(second) + "' of " + reader.what());
      }
    }
  }
}

}  // namespace

void parse_files(MappingReader& reader, Json& params, const KindContext&) {
  require_one_of(reader, {"exist", "absent"});
  read_path_patterns(reader, "exist", params);
  read_path_patterns(reader, "absent", params);
  reject_overlap(reader, params, "exist", "absent");
}

void parse_libraries(MappingReader& reader, Json& params, const KindContext&) {
  require_one_of(reader, {"present", "absent"});
  read_names(reader, "present", params, is_file_name, "a library file name such as 'libbkcl.so'");
  read_names(reader, "absent", params, is_file_name, "a library file name such as 'libbkcl.so'");
  reject_overlap(reader, params, "present", "absent");
}

void parse_linkage(MappingReader& reader, Json& params, const KindContext&) {
  read_path_pattern(reader, "library", params, Need::required);
  require_one_of(reader, {"must_not_need", "must_need"});
  read_names(reader, "must_not_need", params, is_file_name, "a library file name");
  read_names(reader, "must_need", params, is_file_name, "a library file name");
  reject_overlap(reader, params, "must_need", "must_not_need");
  // Through the closure by default: libtorch_fl.so reaching libtorch_cuda.so
  // via a dependency is the same problem as needing it directly.
  params["transitive"] = reader.boolean("transitive").value_or(true);
}

void parse_device_nodes(MappingReader& reader, Json& params, const KindContext&) {
  const auto glob = reader.string("glob", Need::required);
  if (glob) {
    if (glob->starts_with("/dev/")) {
      params["glob"] = *glob;
    } else {
      reader.ctx().error(
          *reader.get("glob"),
          "'glob' of " + reader.what() + " must be a path under /dev/, got '" + *glob + "'");
    }
  }
  read_count(reader, "count", params, Need::optional, ">= 1");
}

}  // namespace envcontract::contracts::kinds
