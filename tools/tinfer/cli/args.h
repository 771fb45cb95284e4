// A small command-line parser: options are declared in a table (name, value or flag, help) and
// anything else is a clear error. Kept tiny so every subcommand compiles fast.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace tinfer::cli {

struct OptionSpec {
  std::string names;  // "-m,--model"
  std::string help;
  bool takes_value = true;
  std::string default_value;
  bool repeatable = false;  // may be given several times; all() returns every value in order
  bool model_file = false;  // the value names a model: a known name (cli/model_names.h) becomes its file
};

// Thrown by Args for --help (or -h where no option takes that name): main prints the usage to stdout
// and exits 0.
struct HelpRequested {
  std::string text;
};

class Args {
 public:
  // Throws Error on unknown options, missing values, or more than max_positionals positional arguments
  // (words not starting with '-'); HelpRequested for --help.
  Args(int argc, char** argv, const std::vector<OptionSpec>& spec, const std::string& usage, int max_positionals = 0);

  bool has(const std::string& name) const;  // given on the command line (or has a default)
  std::string str(const std::string& name) const;
  long long integer(const std::string& name) const;  // Error naming the option if not an integer
  double number(const std::string& name) const;
  bool flag(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;  // every value of a repeatable option
  const std::vector<std::string>& positionals() const { return positionals_; }
  std::string help() const;

 private:
  std::string canonical(const std::string& name) const;
  std::vector<OptionSpec> spec_;
  std::string usage_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_;
  std::vector<std::string> positionals_;
};

}  // namespace tinfer::cli
