#include "report/evidence_text.hpp"

#include <cstdio>
#include <map>
#include <sstream>

#include "common/json_fields.hpp"
#include "common/json_text.hpp"
#include "report/printable.hpp"

namespace envcontract::report {
namespace {

using common::string_field;

// Enough frames and rows to see where something waits, few enough to read.
constexpr std::size_t k_list_rows = 12;
// As the hang diagnosis counts a spinning thread: busy on its own, or
// runnable and as busy as a loaded machine lets it be.
constexpr double k_busy_cpu_percent = 50.0;
constexpr double k_runnable_cpu_percent = 10.0;

std::string scalar_text(const Json& value) {
  return printable(value.is_string() ? value.get<std::string>() : common::json_text(value));
}

bool all_scalars(const Json& list) {
  for (const auto& item : list) {
    if (item.is_structured()) {
      return false;
    }
  }
  return true;
}

void write_more(std::ostream& out, const std::string& indent, std::size_t shown,
                std::size_t total) {
  if (total > shown) {
    out << indent << "... " << total - shown << " more\n";
  }
}

// "#0 xpu_wait (libxpurt.so.1)", one frame a line.
void write_stack(std::ostream& out, const Json& frames, const std::string& indent) {
  std::size_t index = 0;
  for (const auto& frame : frames) {
    if (index == k_list_rows) {
      break;
    }
    const std::string function = string_field(frame, "function");
    out << indent << "#" << index++ << " " << (function.empty() ? "??" : printable(function))
        << " (" << printable(string_field(frame, "library")) << ")\n";
  }
  write_more(out, indent, index, frames.size());
}

double cpu_of(const Json& thread) {
  const auto cpu = thread.find("cpu_percent");
  return cpu != thread.end() && cpu->is_number() ? cpu->get<double>() : 0.0;
}

// Busy threads one by one; the rest counted by state and wait channel.
void write_threads(std::ostream& out, const Json& threads, const std::string& indent) {
  std::map<std::string, std::size_t> waiting;
  std::size_t busy = 0;
  for (const auto& thread : threads) {
    if (!thread.is_object()) {
      continue;
    }
    const bool spinning =
        cpu_of(thread) >= k_busy_cpu_percent ||
        (string_field(thread, "state") == "R" && cpu_of(thread) >= k_runnable_cpu_percent);
    if (spinning) {
      if (busy++ < k_list_rows) {
        char cpu[32];
        std::snprintf(cpu, sizeof cpu, "%.0f", cpu_of(thread));
        out << indent << "thread " << scalar_text(thread.value("tid", Json(""))) << " ("
            << printable(string_field(thread, "name")) << "): state "
            << printable(string_field(thread, "state")) << ", " << cpu << "% CPU\n";
      }
      continue;
    }
    const std::string wchan = string_field(thread, "wchan");
    ++waiting[printable("state " + string_field(thread, "state") +
                        (wchan.empty() ? std::string() : ", waiting in " + wchan))];
  }
  write_more(out, indent, std::min(busy, k_list_rows), busy);
  for (const auto& [what, count] : waiting) {
    out << indent << count << (count == 1 ? " thread" : " threads") << ": " << what << "\n";
  }
}

void write_value(std::ostream& out, const std::string& key, const Json& value,
                 const std::string& indent);

void write_object(std::ostream& out, const Json& object, const std::string& indent) {
  for (const auto& [key, value] : object.items()) {
    write_value(out, key, value, indent);
  }
}

void write_value(std::ostream& out, const std::string& key, const Json& value,
                 const std::string& indent) {
  const std::string inner = indent + "  ";
  if (value.is_null() || (value.is_string() && value.get_ref<const std::string&>().empty()) ||
      (value.is_structured() && value.empty())) {
    return;  // nothing to read
  }
  if (key == "native_stack" && value.is_array()) {
    out << indent << printable(key) << ":\n";
    write_stack(out, value, inner);
  } else if (key == "threads" && value.is_array()) {
    out << indent << printable(key) << ":\n";
    write_threads(out, value, inner);
  } else if (value.is_string() &&
             value.get_ref<const std::string&>().find('\n') != std::string::npos) {
    out << indent << printable(key) << ":\n";
    std::istringstream lines(value.get<std::string>());
    for (std::string line; std::getline(lines, line);) {
      out << inner << printable(line) << "\n";
    }
  } else if (value.is_object()) {
    out << indent << printable(key) << ":\n";
    write_object(out, value, inner);
  } else if (value.is_array() && all_scalars(value)) {
    std::string joined;
    std::size_t shown = 0;
    for (const auto& item : value) {
      if (shown++ == 4 * k_list_rows) {
        joined += ", ... " + std::to_string(value.size() - 4 * k_list_rows) + " more";
        break;
      }
      joined += (joined.empty() ? "" : ", ") + scalar_text(item);
    }
    out << indent << printable(key) << ": " << joined << "\n";
  } else if (value.is_array()) {
    out << indent << printable(key) << ":\n";
    std::size_t shown = 0;
    for (const auto& item : value) {
      if (shown++ == k_list_rows) {
        --shown;
        break;
      }
      out << inner << "- "
          << (item.is_object() ? printable(common::json_text(item)) : scalar_text(item)) << "\n";
    }
    write_more(out, inner, shown, value.size());
  } else {
    out << indent << printable(key) << ": " << scalar_text(value) << "\n";
  }
}

}  // namespace

std::string evidence_text(const Json& evidence, const std::string& indent) {
  std::ostringstream out;
  if (evidence.is_object()) {
    write_object(out, evidence, indent);
  } else if (!evidence.is_null()) {
    out << indent << scalar_text(evidence) << "\n";
  }
  return out.str();
}

}  // namespace envcontract::report
