// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// spdlog's implementation, compiled once for the whole core. Every file of
// the core includes spdlog with SPDLOG_COMPILED_LIB (cache/meson.build) and
// so sees declarations only; header-only, spdlog compiled its whole
// implementation into each of the eight files that log, which was most of
// the core's compile time (about two minutes a file under ASan+UBSan on 2
// cores). Nothing changes at run time: the code is the same, linked into
// the shim, hidden, with no spdlog library to load.
#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/console_globals.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_sinks-inl.h>

// The sink templates the core uses, instantiated here since their members
// are defined only in the -inl headers above.
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>; // AppendFileSink
template class spdlog::sinks::stdout_sink_base<spdlog::details::console_mutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_mutex>; // diagnostics()
