// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/log_inputs.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

namespace gdrhook::cli {

namespace {

bool is_pattern(const std::string &text)
{
    return text.find_first_of("*?[") != std::string::npos;
}

class Expander {
public:
    void argument(const std::string &argument)
    {
        struct stat st;
        if (stat(argument.c_str(), &st) == 0) {
            if (S_ISDIR(st.st_mode))
                directory(argument);
            else
                file(argument, &st);
        } else if (is_pattern(argument)) {
            pattern(argument);
        } else {
            file(argument, nullptr); // reading it will say why not
        }
    }

    LogInputs result;

private:
    void file(const std::string &path, const struct stat *st)
    {
        // The same file under two names is one file.
        if (st && !seen_.emplace(st->st_dev, st->st_ino).second)
            return;
        if (!st && !seen_names_.insert(path).second)
            return;
        result.files.push_back(path);
    }

    void directory(const std::string &path)
    {
        namespace fs = std::filesystem;
        std::vector<std::string> found;
        std::error_code error;
        fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied,
                                            error);
        for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
            const fs::directory_entry &entry = *it;
            std::error_code ignored;
            // Every *.jsonl but a folder, a link or a FIFO among them: the
            // reader refuses those, each with its reason (safe_file.h).
            if (entry.path().extension() == ".jsonl" && !entry.is_directory(ignored))
                found.push_back(entry.path().string());
        }
        if (error) {
            result.errors.push_back("cannot read the directory '" + path + "': " + error.message());
            return;
        }
        if (found.empty()) {
            result.errors.push_back("no *.jsonl file under '" + path + "'");
            return;
        }
        std::sort(found.begin(), found.end());
        for (const std::string &name : found)
            argument_file(name);
    }

    void pattern(const std::string &text)
    {
        glob_t found = {};
        int rc = glob(text.c_str(), 0, nullptr, &found);
        std::vector<std::string> names(found.gl_pathv,
                                       found.gl_pathv + (rc == 0 ? found.gl_pathc : 0));
        globfree(&found);
        if (names.empty()) {
            result.errors.push_back("no file matches '" + text + "'");
            return;
        }
        for (const std::string &name : names) { // glob sorts them
            struct stat st;
            if (stat(name.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
                directory(name);
            else
                argument_file(name);
        }
    }

    void argument_file(const std::string &name)
    {
        struct stat st;
        file(name, stat(name.c_str(), &st) == 0 ? &st : nullptr);
    }

    std::set<std::pair<dev_t, ino_t>> seen_;
    std::set<std::string> seen_names_;
};

} // namespace

LogInputs expand_log_inputs(const std::vector<std::string> &arguments)
{
    Expander expander;
    for (const std::string &argument : arguments)
        expander.argument(argument);
    return std::move(expander.result);
}

} // namespace gdrhook::cli
