// Command-line parser implementation.
#include "cli/args.h"

#include <cstdlib>
#include <sstream>

#include "cli/model_names.h"
#include "tinfer/error.h"

namespace tinfer::cli {

namespace {
std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::stringstream ss(names);
  for (std::string n; std::getline(ss, n, ',');) out.push_back(n);
  return out;
}
}  // namespace

Args::Args(int argc, char** argv, const std::vector<OptionSpec>& spec, const std::string& usage, int max_positionals)
    : spec_(spec), usage_(usage) {
  for (const auto& o : spec_)
    if (!o.default_value.empty()) values_[split_names(o.names).back()] = o.default_value;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i], value;
    bool inline_value = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    std::string key = canonical(a);
    if (key.empty() && (a == "--help" || a == "-h")) throw HelpRequested{help()};
    if (key.empty() && !a.empty() && a[0] != '-' && int(positionals_.size()) < max_positionals) {
      positionals_.push_back(a);
      continue;
    }
    if (key.empty() && max_positionals > 0 && !a.empty() && a[0] != '-')
      fail("unexpected argument '" + a + "'\n" + help());
    if (key.empty()) fail("unknown option '" + a + "'\n" + help());
    const OptionSpec* o = nullptr;
    for (const auto& s : spec_)
      if (split_names(s.names).back() == key) o = &s;
    if (o->takes_value) {
      if (!inline_value) {
        if (i + 1 >= argc) fail("option " + a + " needs a value");
        value = argv[++i];
      }
      if (o->model_file) value = resolve_model(value);
      values_[key] = value;
      if (o->repeatable) repeated_[key].push_back(value);
    } else {
      values_[key] = "1";
    }
  }
}

std::string Args::canonical(const std::string& name) const {
  for (const auto& o : spec_)
    for (const auto& n : split_names(o.names))
      if (n == name) return split_names(o.names).back();
  return {};
}

bool Args::has(const std::string& name) const { return values_.count(canonical(name)) > 0; }

std::string Args::str(const std::string& name) const {
  auto it = values_.find(canonical(name));
  return it == values_.end() ? std::string() : it->second;
}

long long Args::integer(const std::string& name) const {
  std::string v = str(name);
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  check(!v.empty() && end && *end == 0, "option " + name + " expects an integer, got '" + v + "'");
  return x;
}

double Args::number(const std::string& name) const {
  std::string v = str(name);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  check(!v.empty() && end && *end == 0, "option " + name + " expects a number, got '" + v + "'");
  return x;
}

bool Args::flag(const std::string& name) const { return str(name) == "1"; }

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = repeated_.find(canonical(name));
  return it == repeated_.end() ? std::vector<std::string>() : it->second;
}

std::string Args::help() const {
  std::string out = "usage: " + usage_ + "\n";
  for (const auto& o : spec_) {
    out += "  " + o.names + (o.takes_value ? " VALUE" : "") + "\t" + o.help;
    if (!o.default_value.empty()) out += " (default " + o.default_value + ")";
    out += "\n";
  }
  return out;
}

}  // namespace tinfer::cli
