//===- CApi.cpp - The effopt runtime's C interface ------------------------===//

#include "effrt/effrt.h"

#include "effrt/Error.h"
#include "effrt/Session.h"

#include <cstring>
#include <exception>
#include <new>
#include <string>

using namespace effrt;

struct effrt_session {
  explicit effrt_session(Session s) : session(std::move(s)) {}
  Session session;
};

static thread_local std::string lastError;

/// Runs `body`, turning every exception into a status and lastError.
template <typename Body> static int guarded(Body body) {
  try {
    body();
    return 0;
  } catch (const Error &e) {
    lastError = e.what();
  } catch (const std::bad_alloc &) {
    lastError = "out of memory";
  } catch (const std::exception &e) {
    lastError = std::string("internal error: ") + e.what();
  } catch (...) {
    lastError = "internal error: unknown exception";
  }
  return -1;
}

static void requireSession(const effrt_session *s) {
  if (!s)
    fail("effrt: session is NULL");
}

static std::string requireName(const char *name, const char *what) {
  if (!name)
    fail("effrt: ", what, " is NULL");
  return name;
}

extern "C" {

int effrt_api_version(void) { return EFFRT_C_API_VERSION; }

effrt_session *effrt_session_open(const char *effx_path) {
  effrt_session *result = nullptr;
  guarded([&] {
    std::string path = requireName(effx_path, "path");
    result = new effrt_session(Session::open(path));
  });
  return result;
}

void effrt_session_close(effrt_session *session) { delete session; }

int effrt_session_set_input(effrt_session *session, const char *name,
                            const void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    session->session.setInputBytes(requireName(name, "input name"), data,
                                   nbytes);
  });
}

int effrt_session_step(effrt_session *session, float *loss) {
  return guarded([&] {
    requireSession(session);
    float value = session->session.step();
    if (loss)
      *loss = value;
  });
}

int effrt_session_forward(effrt_session *session) {
  return guarded([&] {
    requireSession(session);
    session->session.forward();
  });
}

int effrt_session_get_output(const effrt_session *session, const char *name,
                             void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    std::string n = requireName(name, "output name");
    const EffxTensor *out = session->session.manifest().findOutput(n);
    if (out && nbytes != out->byteSize)
      fail(session->session.file().path(), ": output ", quoteName(n), " has ",
           out->byteSize, " bytes (", dtypeName(out->dtype), " ",
           formatShape(out->shape), "), the buffer ", nbytes);
    Tensor t = session->session.readOutput(n);
    if (nbytes && !data)
      fail("effrt: buffer is NULL");
    if (nbytes)
      std::memcpy(data, t.data(), nbytes);
  });
}

int effrt_session_save(effrt_session *session, const char *path) {
  return guarded([&] {
    requireSession(session);
    session->session.save(requireName(path, "path"));
  });
}

int effrt_session_load(effrt_session *session, const char *path) {
  return guarded([&] {
    requireSession(session);
    session->session.load(requireName(path, "path"));
  });
}

int64_t effrt_session_step_counter(const effrt_session *session) {
  return session ? session->session.globalStep() : -1;
}

uint64_t effrt_session_allocated_bytes(const effrt_session *session,
                                       uint64_t *state, uint64_t *arena,
                                       uint64_t *io) {
  AllocatedBytes a;
  if (session)
    a = session->session.allocated();
  if (state)
    *state = a.state;
  if (arena)
    *arena = a.arena;
  if (io)
    *io = a.io;
  return a.total();
}

const char *effrt_session_manifest(const effrt_session *session) {
  return session ? session->session.manifest().json.c_str() : "";
}

int effrt_session_read_state(const effrt_session *session, const char *name,
                             void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    Tensor t = session->session.readState(requireName(name, "state name"));
    if (nbytes != t.byteSize())
      fail(session->session.file().path(), ": state entry ", quoteName(name),
           " has ", t.byteSize(), " bytes, the buffer ", nbytes);
    if (nbytes && !data)
      fail("effrt: buffer is NULL");
    if (nbytes)
      std::memcpy(data, t.data(), nbytes);
  });
}

int effrt_session_write_state(effrt_session *session, const char *name,
                              const void *data, size_t nbytes) {
  return guarded([&] {
    requireSession(session);
    std::string n = requireName(name, "state name");
    const EffxStateEntry *e = session->session.manifest().findState(n);
    if (!e)
      fail(session->session.file().path(), ": the model has no state entry ",
           quoteName(n));
    if (nbytes != e->byteSize)
      fail(session->session.file().path(), ": state entry ", quoteName(n),
           " has ", e->byteSize, " bytes, the buffer ", nbytes);
    if (nbytes && !data)
      fail("effrt: buffer is NULL");
    session->session.writeState(
        n, Tensor::view(e->dtype, e->shape, data, nullptr));
  });
}

int effrt_set_num_threads(int threads) {
  return guarded([&] { setBlasThreads(threads); });
}

const char *effrt_last_error(void) { return lastError.c_str(); }

} // extern "C"
