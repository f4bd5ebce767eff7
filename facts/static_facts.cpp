#include "facts/static_facts.hpp"

namespace envcontract::facts {
namespace {

namespace fs = std::filesystem;

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json distributions_json(const std::vector<Distribution>& distributions) {
  auto json = Json::array();
  for (const auto& distribution : distributions) {
    json.push_back(to_json(distribution));
  }
  return json;
}

}  // namespace

Json to_json(const Distribution& distribution) {
  return {{"name", distribution.name},          {"normalized", distribution.normalized},
          {"version", distribution.version},    {"installer", distribution.installer},
          {"source", distribution.source},      {"metadata", distribution.metadata.string()},
          {"top_level", distribution.top_level}};
}

std::vector<fs::path> SearchPath::import_dirs() const {
  std::vector<fs::path> dirs;
  if (!stdlib.empty()) {
    dirs.push_back(stdlib);
    dirs.push_back(stdlib / "lib-dynload");
  }
  for (const auto& entry : entries) {
    dirs.push_back(entry.path);
  }
  for (const auto& module : editable) {
    dirs.push_back(module.path);
  }
  return dirs;
}

std::vector<fs::path> SearchPath::site_dirs() const {
  std::vector<fs::path> dirs;
  for (const auto& entry : entries) {
    if (entry.site_dir) {
      dirs.push_back(entry.path);
    }
  }
  return dirs;
}

Json to_json(const SearchPath& path) {
  auto entries = Json::array();
  for (const auto& entry : path.entries) {
    entries.push_back(
        {{"path", entry.path.string()}, {"origin", entry.origin}, {"site_dir", entry.site_dir}});
  }
  auto editable = Json::array();
  for (const auto& module : path.editable) {
    editable.push_back({{"module", module.module},
                        {"path", module.path.string()},
                        {"finder", module.finder.string()}});
  }
  auto unlisted = Json::array();
  for (const auto& place : path.unlisted) {
    unlisted.push_back(place.string());
  }
  return {{"entries", entries},
          {"editable", editable},
          {"base_prefix", path.base_prefix.string()},
          {"stdlib", path.stdlib.string()},
          {"debian_layout", path.debian_layout},
          {"user_site", path.user_site},
          {"free_threaded", path.free_threaded},
          {"notes", path.notes},
          {"unlisted", unlisted},
          {"incomplete", path.incomplete.empty() ? Json(nullptr) : Json(path.incomplete)}};
}

Json to_json(const TorchFacts& torch) {
  return {{"location", torch.location.string()},
          {"version", torch.version},
          {"base", torch.base},
          {"local", torch.local},
          {"cuda", optional_json(torch.cuda)},
          {"hip", optional_json(torch.hip)},
          {"distribution_version", torch.distribution_version},
          {"libraries", torch.libraries},
          {"problem", torch.problem}};
}

Json to_json(const TritonFacts& triton) {
  return {{"location", triton.location.string()},
          {"provider", triton.provider},
          {"provider_version", triton.provider_version},
          {"version", optional_json(triton.version)},
          {"backends", triton.backends},
          {"providers", triton.providers}};
}

Json to_json(const StaticFacts& facts) {
  Json json;
  auto sites = Json::array();
  for (const auto& site : facts.site_packages) {
    sites.push_back(site.string());
  }
  json["site_packages"] = sites;
  json["torch"] = facts.torch.present ? to_json(facts.torch) : Json(nullptr);
  json["triton"] = facts.triton.present ? to_json(facts.triton) : Json(nullptr);
  json["modules"] = facts.module_files.names();
  json["search_path"] = to_json(facts.search_path);
  Json paths = Json::object();
  for (std::size_t i = 0; i < facts.module_files.size(); ++i) {
    paths[std::string(facts.module_files.name(i))] = facts.module_files.file(i).real;
  }
  json["module_paths"] = paths;
  auto shadowed = Json::array();
  for (const auto& module : facts.shadowed) {
    shadowed.push_back(
        {{"module", module.module}, {"path", module.path.string()}, {"by", module.by.string()}});
  }
  json["shadowed"] = shadowed;
  json["distributions"] = distributions_json(facts.distributions);
  auto foreign = Json::array();
  for (const auto& site : facts.other_python_sites) {
    foreign.push_back({{"path", site.path.string()},
                       {"python", site.python},
                       {"modules", site.modules},
                       {"distributions", distributions_json(site.distributions)}});
  }
  json["other_python_sites"] = foreign;
  return json;
}

}  // namespace envcontract::facts
