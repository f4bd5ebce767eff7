#include "contracts/check_parser.hpp"

#include "common/spelling.hpp"
#include "contracts/mapping_reader.hpp"
#include "contracts/values.hpp"

namespace envcontract::contracts {
namespace {

std::optional<Severity> read_severity(MappingReader& reader) {
  const auto text = reader.string("severity");
  if (!text || *text == "required") {
    return Severity::required;
  }
  if (*text == "advisory") {
    return Severity::advisory;
  }
  reader.ctx().error(*reader.get("severity"),
                     "'severity' of " + reader.what() + " must be 'required' or 'advisory', got '" +
                         *text + "'" + common::did_you_mean(*text, {"required", "advisory"}));
  return std::nullopt;
}

}  // namespace

std::string CheckParser::claim_id(const std::string& wanted, bool explicit_id,
                                  const YAML::Node& where) {
  std::string id = wanted;
  for (int suffix = 2; m_ids.contains(id); ++suffix) {
    if (explicit_id) {
      m_ctx.error(where, "duplicate check id '" + wanted + "' (first defined at " +
                             m_ids[wanted].to_string() + "); ids must be unique");
      return "";
    }
    id = wanted + "-" + std::to_string(suffix);
  }
  m_ids.emplace(id, m_ctx.locate(where));
  return id;
}

void CheckParser::parse(const YAML::Node& node, const std::string& section) {
  // Name the check in messages by its id when it has one, else by position.
  std::string what = "check";
  if (const auto id = scalar_child(node, "id"); !id.empty()) {
    what = "check '" + id + "'";
  } else if (const auto kind = scalar_child(node, "kind"); !kind.empty()) {
    what = "'" + kind + "' check";
  }
  MappingReader reader(node, what, m_ctx);
  if (!reader.is_mapping()) {
    return;
  }
  Check check;
  check.section = section;
  check.origin = m_ctx.locate(node);
  const auto kind_name = reader.string("kind", Need::required);
  const auto id = reader.string("id");
  const auto severity = read_severity(reader);
  check.description = reader.string("description").value_or("");
  const CheckKind* kind = kind_name ? find_check_kind(*kind_name) : nullptr;
  if (kind_name && !kind) {
    m_ctx.error(*reader.get("kind"), "unknown check kind '" + *kind_name + "'" +
                                         common::did_you_mean(*kind_name, check_kind_names()) +
                                         "; see docs/contracts.md for the kinds");
  }
  if (id && !is_check_id(*id)) {
    m_ctx.error(*reader.get("id"), "check id '" + *id +
                                       "' must start with a letter or digit and contain only "
                                       "letters, digits, '-', '_' and '.'");
  }
  if (!kind) {
    // Without a kind its keys cannot be judged; the other checks still are.
    return;
  }
  check.kind = std::string(kind->name);
  check.params = kind->parse(reader, m_kind_context);
  reader.reject_unknown_keys();
  // A torch check judged "after importing" some modules needs the import stage.
  check.stage = kind->stage;
  if (const auto* torch = std::get_if<TorchParams>(&check.params);
      torch != nullptr && !torch->after_import.empty()) {
    check.stage = ProbeStage::imports;
  }
  if (severity) {
    check.severity = *severity;
  }
  const YAML::Node id_node = id ? *reader.get("id") : node;
  // An invalid id (reported) falls back to the kind's name as an absent one
  // does: a clash of that name is no error of the author's.
  const bool valid_id = id && is_check_id(*id);
  check.id = claim_id(valid_id ? *id : check.kind, valid_id, id_node);
  if (!check.id.empty()) {
    m_checks.push_back(std::move(check));
  }
}

void CheckParser::add(Check check, const YAML::Node& id_node) {
  check.id = claim_id(check.id, false, id_node);
  m_checks.push_back(std::move(check));
}

}  // namespace envcontract::contracts
