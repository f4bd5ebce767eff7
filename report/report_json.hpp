#pragma once

#include "report/report_model.hpp"

// The report's edge form. to_json writes what docs/report.schema.json
// describes, field for field in a stable order; report_from_json reads a
// report back, its own or another agent's, tolerantly: a field that is
// missing or of another type takes its default and never throws. Defaults
// never claim more than the report said: an env or a check without a
// verdict or status reads as `error` (could not be judged), not as passing,
// and a check without a severity as `required` (it counts against its env).
// Key order is not kept for what the agent never writes in that order (a
// partial report served during the first scan lists its envs last).
namespace envcontract::report {

Json to_json(const Report& report);
Json to_json(const EnvReport& env);
Json to_json(const CheckReport& check);

Report report_from_json(const Json& json);
EnvReport env_report_from_json(const Json& json);

// The verdict a report's text names; nullopt for any other text.
std::optional<Verdict> verdict_from_string(const std::string& text);

// The report with every string (evidence, expected and actual included)
// made printable (printable.hpp): what renderings for a terminal draw from,
// since any string may come from env output or a remote host.
Report printable_report(const Report& report);

}  // namespace envcontract::report
