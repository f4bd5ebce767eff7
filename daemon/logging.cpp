#include "daemon/logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace envcontract::daemon {

void configure_logging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("envcontractd");
  logger->set_level(spdlog::level::from_str(level));
  logger->set_pattern(std::getenv("JOURNAL_STREAM") != nullptr ? "<%l> %v"
                                                               : "%Y-%m-%dT%H:%M:%S%z %l %v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace envcontract::daemon
