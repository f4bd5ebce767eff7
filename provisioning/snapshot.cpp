#include "provisioning/snapshot.hpp"

#include <cstdio>
#include <set>
#include <sstream>

#include "contracts/values.hpp"

namespace envcontract::provisioning {
namespace {

std::string duration_text(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

std::string flow_list(const std::vector<std::string>& items) {
  std::string text = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    text += (i == 0 ? "" : ", ") + yaml_quoted(items[i]);
  }
  return text + "]";
}

// "3.10.13" -> "3.10"
std::string minor_version(const std::string& version) {
  const auto first = version.find('.');
  const auto second = first == std::string::npos ? first : version.find('.', first + 1);
  return second == std::string::npos ? version : version.substr(0, second);
}

// Python code as YAML: a block scalar where that keeps it exactly (the
// chomping indicator says how many newlines end it), else a quoted scalar:
// when its first line is indented (a block's indentation would be read
// from it), a line holds only blanks, or it holds a control character or a
// Unicode line break.
std::string code_scalar(const std::string& text, int indent) {
  bool plain = !text.empty();
  bool first = true;
  std::size_t start = 0;
  while (plain && start <= text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    if (!line.empty() && line.find_first_not_of(" \t") == std::string::npos) {
      plain = false;
    }
    if (first && !line.empty()) {
      plain = plain && line.front() != ' ' && line.front() != '\t';
      first = false;
    }
    for (const char c : line) {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && c != '\t') || byte == 0x7f || byte == 0xc2 || byte == 0xe2) {
        plain = false;
      }
    }
    start = end + 1;
  }
  std::size_t newlines = 0;
  while (newlines < text.size() && text[text.size() - 1 - newlines] == '\n') {
    ++newlines;
  }
  // Several newlines at the end would need keep chomping, which would also
  // keep the blank line after the block: quoted instead.
  if (!plain || newlines > 1) {
    return yaml_quoted(text) + "\n";
  }
  std::string out = newlines == 0 ? "|-\n" : "|\n";
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    out += (line.empty() ? "" : std::string(static_cast<std::size_t>(indent), ' ') + line) + "\n";
  }
  return out;
}

// Text from the env, made safe for a comment line: every character some
// YAML parser (or editor) takes as a line break ends the comment there, so
// it would make what follows YAML: CR, NEL, LS, PS, and every other control
// character, become '?'.
std::string comment_safe(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const bool nel =
        byte == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85;
    const bool line_or_paragraph = byte == 0xe2 && i + 2 < text.size() &&
                                   static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                                   (static_cast<unsigned char>(text[i + 2]) == 0xa8 ||
                                    static_cast<unsigned char>(text[i + 2]) == 0xa9);
    if (nel || line_or_paragraph) {
      out += '?';
      i += nel ? 1 : 2;
    } else if (text[i] != '\n' && (byte < 0x20 || byte == 0x7f)) {
      out += '?';
    } else {
      out += text[i];
    }
  }
  return out;
}

// A comment of one or more lines at `indent`.
std::string comment(const std::string& raw, int indent) {
  const std::string text = comment_safe(raw);
  std::string out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    out += std::string(static_cast<std::size_t>(indent), ' ') + "# " + line + "\n";
  }
  return out;
}

}  // namespace

std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    // Unicode's line breaks, which YAML folds inside a quoted scalar.
    if (byte == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) {
      out += "\\u0085";
      ++i;
      continue;
    }
    if (byte == 0xe2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(text[i + 2]) == 0xa8 ||
         static_cast<unsigned char>(text[i + 2]) == 0xa9)) {
      out += static_cast<unsigned char>(text[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

void write_header(std::ostream& out, const SnapshotInput& in) {
  out << comment("Written by `envcontractd snapshot` from the env " + in.env + " (" + in.prefix +
                     ")\non host " + in.host + " at " + in.taken_at +
                     ". It states what that env is, so that\nother envs can be held to it. "
                     "Review it: drop what your platform does not require\n(the pins, "
                     "say), then keep it under version control.",
                 0);
  out << "schema_version: 1\nname: " << yaml_quoted(in.contract_name) << "\n";
  if (!in.platform.empty()) {
    out << "platform: " << yaml_quoted(in.platform) << "\n";
  }
  out << "description: " << yaml_quoted("what the env " + in.env + " was at " + in.taken_at)
      << "\n\n";
  if (!in.image.empty()) {
    out << comment("The container image the host ran.", 0) << "targets:\n  - name: host\n"
        << "    image: " << yaml_quoted(in.image) << "\n\n";
  }
  out << "envs:\n  require: any\n\nchecks:\n";
}

void write_python(std::ostream& out, const SnapshotInput& in) {
  const std::string python = minor_version(in.python_version);
  out << comment("Python " + python + " (" + in.python_version + " in the env).", 2)
      << "  - id: python-version\n    kind: python\n    version: " << yaml_quoted(python) << "\n\n";
}

void write_torch(std::ostream& out, const SnapshotTorch& torch) {
  out << comment("torch " + torch.version + ", " +
                     (torch.cuda ? "a CUDA " + *torch.cuda + " build."
                                 : "a build without CUDA (torch.version.cuda is None)."),
                 2)
      << "  - id: torch-build\n    kind: torch\n    base: " << yaml_quoted(torch.base) << "\n";
  if (!torch.local.empty()) {
    out << "    local: " << yaml_quoted(torch.local) << "\n";
  }
  out << "    cuda: " << (torch.cuda ? yaml_quoted(*torch.cuda) : std::string("none")) << "\n";
  if (!torch.cuda && !torch.hip) {
    out << "    hip: none\n";
  }
  out << "\n";
  if (!torch.cuda && !torch.cuda_library_present) {
    out << comment("Its torch carries no CUDA library.", 2)
        << "  - id: no-libtorch-cuda\n    kind: files\n"
        << "    absent: [\"{site}/torch/lib/libtorch_cuda.so\"]\n\n";
  }
}

void write_triton(std::ostream& out, const SnapshotTriton& triton) {
  out << comment("triton from " + triton.provider + " " + triton.provider_version +
                     ", with the backends it carries.",
                 2)
      << "  - id: triton-provider\n    kind: triton\n    provider: " << yaml_quoted(triton.provider)
      << "\n    backends: " << flow_list(triton.backends) << "\n\n";
}

void write_imports(std::ostream& out, const SnapshotInput& in) {
  if (in.imported.empty() && in.import_failures.empty()) {
    return;
  }
  std::string why = "These imported, in this order, in one process.";
  for (const auto& [module, error] : in.import_failures) {
    why += "\nLeft out: " + module + " did not import: " + error;
  }
  out << comment(why, 2);
  if (in.imported.empty()) {
    out << comment("(nothing imported: no imports check)", 2) << "\n";
  } else {
    out << "  - id: imports\n    kind: imports\n    modules: " << flow_list(in.imported) << "\n\n";
  }
}

void write_activation(std::ostream& out, const SnapshotInput& in) {
  if (!in.variables.empty() || !in.variables_set.empty()) {
    std::string why = "What activation sets here.";
    if (!in.variables_set.empty()) {
      why +=
          "\nSet to a path in the env itself (each env has its own), so only that they\nare "
          "set is stated.";
    }
    out << comment(why, 2) << "  - id: activation-variables\n    kind: environment\n";
    if (!in.variables.empty()) {
      out << "    equals:\n";
      for (const auto& [name, value] : in.variables) {
        out << "      " << yaml_quoted(name) << ": " << yaml_quoted(value) << "\n";
      }
    }
    if (!in.variables_set.empty()) {
      out << "    set: " << flow_list(in.variables_set) << "\n";
    }
    out << "\n";
  }
  if (!in.library_path_first.empty()) {
    out << comment("Activation puts this directory first on the library path.", 2)
        << "  - id: library-path-first\n    kind: search_path\n    starts_with: "
        << flow_list({in.library_path_first}) << "\n\n";
  }
}

void write_pins(std::ostream& out, const SnapshotInput& in) {
  // A name or version the metadata got wrong, or a second record of one
  // name (a stale dist-info), is left out rather than pinned.
  std::vector<std::pair<std::string, std::string>> pins;
  std::set<std::string> pinned;
  for (const auto& [name, version] : in.distributions) {
    if (contracts::is_distribution_name(name) && contracts::is_pep440_version(version) &&
        pinned.insert(name).second) {
      pins.emplace_back(name, version);
    }
  }
  if (!in.pin || pins.empty()) {
    return;
  }
  out << comment("Every distribution at the version installed (--pin): loosen what may vary.", 2)
      << "  - id: pinned-distributions\n    kind: distributions\n    pins:\n";
  for (const auto& [name, version] : pins) {
    out << "      " << yaml_quoted(name) << ": " << yaml_quoted("==" + version) << "\n";
  }
  out << "\n";
}

void write_devices(std::ostream& out, const SnapshotDevices& devices) {
  const std::string base = devices.base_op + " " + std::to_string(devices.base_value);
  std::string count = base;
  std::string why = "From the base contract.";
  // Only a lower bound is tightened to what was counted, and only when
  // the count meets it: "== 8" or a count that fails stays as it was.
  const bool lower_bound = devices.base_op == ">=" || devices.base_op == ">";
  const bool meets =
      devices.observed && (devices.base_op == ">=" ? *devices.observed >= devices.base_value
                                                   : *devices.observed > devices.base_value);
  if (lower_bound && meets && *devices.observed > 0) {
    count = ">= " + std::to_string(*devices.observed);
    why += " It counted " + std::to_string(*devices.observed) +
           " here; fewer is drift (the base contract asked " + base + ").";
  } else if (devices.observed) {
    why += " It counted " + std::to_string(*devices.observed) +
           " here; the base contract's count is kept.";
  } else {
    why += " It did not count devices here (" + devices.problem +
           "): the base contract's count is kept.";
  }
  out << comment(why, 2) << "  - id: " << devices.id << "\n    kind: devices\n";
  if (devices.advisory) {
    out << "    severity: advisory\n";
  }
  out << "    expression: " << yaml_quoted(devices.expression)
      << "\n    imports: " << flow_list(devices.imports) << "\n    count: " << yaml_quoted(count)
      << "\n    timeout: " << duration_text(devices.timeout) << "\n\n";
}

void write_smoke(std::ostream& out, const SnapshotSmoke& smoke) {
  out << comment("From the base contract, as it is; here it " + smoke.outcome + ".", 2)
      << "  - id: " << smoke.id << "\n    kind: smoke\n";
  if (smoke.advisory) {
    out << "    severity: advisory\n";
  }
  if (!smoke.description.empty()) {
    out << "    description: " << yaml_quoted(smoke.description) << "\n";
  }
  if (!smoke.expect_output.empty()) {
    out << "    expect_output: " << yaml_quoted(smoke.expect_output) << "\n";
  }
  out << "    timeout: " << duration_text(smoke.timeout)
      << "\n    code: " << code_scalar(smoke.code, 6) << "\n";
}

}  // namespace

std::string snapshot_yaml(const SnapshotInput& in) {
  std::ostringstream out;
  write_header(out, in);
  write_python(out, in);
  if (in.torch) {
    write_torch(out, *in.torch);
  }
  if (in.triton) {
    write_triton(out, *in.triton);
  }
  write_imports(out, in);
  write_activation(out, in);
  write_pins(out, in);
  for (const auto& devices : in.devices) {
    write_devices(out, devices);
  }
  for (const auto& smoke : in.smokes) {
    write_smoke(out, smoke);
  }
  return out.str();
}

}  // namespace envcontract::provisioning
