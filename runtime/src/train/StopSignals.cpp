//===- StopSignals.cpp - SIGINT/SIGTERM as stop requests ------------------===//

#include "StopSignals.h"

#include <csignal>
#include <mutex>

#include <signal.h>

using namespace effrt;

namespace {
volatile std::sig_atomic_t gSignal = 0;
std::mutex gMutex;
int gUsers = 0;
struct sigaction gOldInt, gOldTerm;
} // namespace

extern "C" {
static void effrtOnStopSignal(int signo) { gSignal = signo; }
}

StopSignals::StopSignals() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gUsers++ > 0)
    return;
  gSignal = 0;
  struct sigaction action {};
  action.sa_handler = effrtOnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &gOldInt);
  ::sigaction(SIGTERM, &action, &gOldTerm);
}

StopSignals::~StopSignals() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (--gUsers > 0)
    return;
  ::sigaction(SIGINT, &gOldInt, nullptr);
  ::sigaction(SIGTERM, &gOldTerm, nullptr);
}

int StopSignals::pending() { return gSignal; }

int StopSignals::take() {
  int signo = gSignal;
  if (signo)
    gSignal = 0;
  return signo;
}
