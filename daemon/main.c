/*
 * main.c: kvsnapd's start and stop: settings, the listening socket (our
 * own, or systemd's with socket activation), the loop, and what the loop
 * loads on a thread of its own once it listens (main_load: the service,
 * i.e. the model, loaded once and shared by every worker, the profile, the
 * store, see service/service.h; then the workers).  Listening first is
 * what llama.cpp's server does: a probe sees "loading" rather than a
 * refused connection (docs/ARCHITECTURE.md, "Daemon").
 * No self-daemonizing: run in the foreground under systemd or a shell.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <systemd/sd-daemon.h>

#include "common/paths.h"
#include "daemon/daemon_internal.h"

struct daemon *daemon_g;

/* libevent's own messages into our log. */
static void
main_event_log(int sev, const char *msg)
{
	dlog(sev >= EVENT_LOG_ERR ? DLOG_ERROR : sev >= EVENT_LOG_WARN ? DLOG_WARN : DLOG_DEBUG,
	    "libevent: %s", msg);
}

/* The socket systemd passed (socket activation), or -1. */
static int
main_activated_socket(void)
{
	int n = sd_listen_fds(1);
	if (n <= 0)
		return -1;
	if (n > 1)
		dlog(DLOG_WARN, "systemd passed %d sockets; using the first", n);
	if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
		dlog(DLOG_ERROR, "the socket systemd passed is not a listening Unix stream socket");
		return -2;
	}
	return SD_LISTEN_FDS_START;
}

/* The service's news about the shared tier (an outage, once; its return). */
static void
main_tier_log(void *arg, int warn, const char *msg)
{
	(void)arg;
	dlog(warn ? DLOG_WARN : DLOG_INFO, "%s", msg);
}

static int
main_open(struct daemon *d)
{
	struct svc_conf sc;
	struct svc_status st;
	int quant;

	if ((quant = svc_quant_parse(d->cfg.quant)) < 0) {
		dlog(DLOG_ERROR, "unknown quant '%s' (fp16, q8, q4, q4kc, q4h, q4kch, q6h, q5h, q3h, k5v3h, k4v2h, k8v4h)", d->cfg.quant);
		return -1;
	}
	if (svc_use_backend(d->cfg.backend, st.why, sizeof(st.why))) {
		dlog(DLOG_ERROR, "backend %s: %s", d->cfg.backend, st.why);
		return -1;
	}
	if (d->cfg.state_xdg && kv_mkdir_parents(d->cfg.state, st.why, sizeof(st.why))) {
		dlog(DLOG_ERROR, "cannot make the state directory %s: %s", d->cfg.state, st.why);
		return -1;
	}
	sc = (struct svc_conf){ .model = d->cfg.model, .state = d->cfg.state,
		.policy = d->cfg.policy, .opts = d->cfg.opts, .budget = d->cfg.budget,
		.ratio = d->cfg.ratio, .chunk = d->cfg.chunk, .quant = quant,
		.shared = d->cfg.shared, .shared_auth = d->cfg.shared_auth, .log = main_tier_log,
		.index = 1 };
	if (svc_open(&d->v, &sc, &st)) {
		if (st.step == SVC_AT_MODEL)
			dlog(DLOG_ERROR, "cannot load the model %s: %s", d->cfg.model, st.why);
		else if (st.step == SVC_AT_TOKENIZER)
			dlog(DLOG_ERROR, "cannot load the tokenizer: %s", st.why);
		else if (st.step == SVC_AT_STORE_OPEN)
			dlog(DLOG_ERROR, "cannot open the store in %s: %s", d->cfg.state, st.why);
		else if (st.step == SVC_AT_SHARED_AUTH)
			dlog(DLOG_ERROR, "shared tier %s: %s", d->cfg.shared, st.why);
		else if (st.step == SVC_AT_PROFILE)
			dlog(DLOG_ERROR, "%s", st.why);
		else
			dlog(DLOG_ERROR, "policy: %s", st.why[0] ? st.why : svc_eng_strerror(st.rc));
		return -1;
	}
	dlog(DLOG_INFO, "model %s (%.12s), store %s", d->cfg.model,
	    svc_model_fingerprint(d->v), d->cfg.state);
	dlog(DLOG_INFO, "profile %.12s: %s", svc_profile_hex(d->v), svc_profile_text(d->v));
	if (d->cfg.shared)
		dlog(DLOG_INFO, "shared tier %s%s", d->cfg.shared, d->cfg.shared_auth ?
		    " (with credentials)" : "");
	return 0;
}

/* What srv_run loads while it already listens (its loader thread): the
 * service, then the workers.  0, or -1 with the reason logged. */
static int
main_load(struct daemon *d)
{
	if (main_open(d))
		return -1;
	return jobs_init(d) ? -1 : 0;
}

void
main_stop_now(void)
{
	if (daemon_g && daemon_g->own_socket)
		unlink(daemon_g->own_socket);
	_exit(EXIT_SUCCESS);
}

int
main(int argc, char **argv)
{
	static struct daemon d;
	int rc, fd, own_socket = 0, status = EXIT_FAILURE;

	svc_child_main(argc, argv); /* a document's extraction (formats/isolate.c) */
	if ((rc = dcfg_load(&d.cfg, argc, argv))) {
		dcfg_free(&d.cfg);
		return rc < 0 ? EXIT_SUCCESS : rc;
	}
	dlog_level = d.cfg.log_level;
	daemon_g = &d;
	signal(SIGPIPE, SIG_IGN);
	event_set_log_callback(main_event_log);
	if (evthread_use_pthreads()) {
		dlog(DLOG_ERROR, "libevent without thread support");
		goto out;
	}
	if ((fd = main_activated_socket()) == -2)
		goto out;
	if (fd < 0) {
		if ((fd = srv_listen(d.cfg.socket)) < 0)
			goto out;
		own_socket = 1;
		d.own_socket = d.cfg.socket;
		dlog(DLOG_INFO, "listening on %s", d.cfg.socket);
	} else {
		evutil_make_socket_nonblocking(fd);
		dlog(DLOG_INFO, "listening on the socket systemd passed");
	}
	rc = srv_run(&d, fd, main_load);
	jobs_stop();
	jobs_free();
	if (own_socket)
		unlink(d.cfg.socket);
	status = rc ? EXIT_FAILURE : EXIT_SUCCESS;
out:
	jobs_free();
	svc_close(d.v);
	dcfg_free(&d.cfg);
	return status;
}
