#include "freshness/fingerprint.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "common/json_text.hpp"
#include "common/sha256.hpp"

namespace envcontract::freshness {

namespace {

// The files whose contents decide the facts without always changing them:
// the interpreter, every library the env's extensions load (its own and what
// they resolve to), torch's and triton's version files, each module's
// location, each distribution's metadata. A byte added to libc10.so or an
// edited version.py must re-probe even when no fact read from files differs.
std::vector<std::string> deciding_files(const facts::EnvFacts& env) {
  std::vector<std::string> files;
  files.push_back(env.env.python.string());
  for (const auto& library : env.linkage.libraries) {
    files.push_back(library.path.string());
    for (const auto& link : library.closure) {
      files.push_back(link.path);
    }
  }
  const auto& found = env.static_facts;
  const std::pair<bool, std::string> packages[] = {
      {found.torch.present, found.torch.location.string()},
      {found.triton.present, found.triton.location.string()}};
  for (const auto& [present, location] : packages) {
    if (present && !location.empty()) {
      files.push_back(location + "/__init__.py");
      files.push_back(location + "/version.py");
      files.push_back(location + "/_version.py");
    }
  }
  for (std::size_t i = 0; i < found.module_files.size(); ++i) {
    files.push_back(found.module_files.file(i).real);
  }
  for (const auto& distribution : found.distributions) {
    // A dist-info or egg-info directory, or a file: its version lives in METADATA or PKG-INFO.
    const std::string metadata = distribution.metadata.string();
    files.push_back(metadata);
    files.push_back(metadata + "/METADATA");
    files.push_back(metadata + "/PKG-INFO");
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace

FingerprintInput fingerprint_input(const facts::EnvFacts& env, const std::string& contract_sha256) {
  // The facts' JSON text is their canonical form here: what any of them
  // says, and not how it is held, decides.
  const facts::Json json = facts::to_json(env);
  FingerprintInput input;
  input.material = contract_sha256;
  for (const char* key :
       {"prefix", "python", "python_version", "static", "activation", "linkage"}) {
    input.material += '\0';
    input.material += json.contains(key) ? common::json_text(json.at(key)) : "";
  }
  input.files = deciding_files(env);
  return input;
}

std::string env_fingerprint(const FingerprintInput& input) {
  std::string material = input.material;
  // The change time is the one a file's owner cannot set: a file rewritten
  // in place with its old size and modification time put back (a tar or
  // rsync -t over the env) still changes it.
  for (const auto& file : input.files) {
    struct stat info {};
    material += '\0' + file + '\t';
    if (!file.empty() && ::stat(file.c_str(), &info) == 0) {
      material += std::to_string(info.st_size) + ' ' + std::to_string(info.st_mtim.tv_sec) + '.' +
                  std::to_string(info.st_mtim.tv_nsec) + ' ' + std::to_string(info.st_ctim.tv_sec) +
                  '.' + std::to_string(info.st_ctim.tv_nsec) + ' ' + std::to_string(info.st_ino);
    } else {
      material += "absent";
    }
  }
  return common::sha256_hex(material);
}

}  // namespace envcontract::freshness
