#pragma once

#include <string>

#include "tests/support/webhook_receiver.hpp"

namespace envcontract::testing {

// The Alertmanager configuration docs/fleet.md shows ("# alertmanager.yml"),
// its route as written but for its waits, shortened to a second, and its
// receivers replaced by webhooks of `receiver`: /mail for
// accelerator-team-mail, /page for accelerator-oncall. "" when the page has
// no such example.
std::string documented_alertmanager_config(const WebhookReceiver& receiver);

}  // namespace envcontract::testing
