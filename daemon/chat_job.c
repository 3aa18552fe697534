/*
 * chat_job.c: the chat job, the plain model with no document (HTTP only):
 * the request's conversation (or raw prompt) to svc_chat, each token as a
 * "token" event as a query sends them, and the outcome as the same
 * result a query ends with (tokens, prompt_tokens, stop, ttft_s, seconds)
 * or the protocol's error.
 */
#include <stdlib.h>

#include "daemon/daemon_internal.h"

void
chat_job_run(struct worker *w, struct job *j)
{
	const struct proto_req *r = &j->req;
	struct svc_hooks hk = { NULL, job_token, j, &j->cancel };
	struct svc_msg *msgs = NULL;
	struct svc_chat_req cr = { 0 };
	struct svc_answer a;
	struct svc_status st;
	size_t i;

	if (!r->raw) {
		if (!(msgs = calloc(r->n_msgs ? r->n_msgs : 1, sizeof(*msgs)))) {
			job_error(j, PROTO_E_INTERNAL, "out of memory");
			return;
		}
		for (i = 0; i < r->n_msgs; i++)
			msgs[i] = (struct svc_msg){ r->msgs[i].role, r->msgs[i].content,
				r->msgs[i].content_len };
		cr.msgs = msgs;
		cr.n_msgs = r->n_msgs;
	} else {
		cr.prompt = r->question;
		cr.prompt_len = r->question_len;
	}
	cr.max_tokens = r->max_tokens;
	cr.whole_utf8 = 1;
	cr.temperature = (float)r->temperature;
	cr.top_p = (float)r->top_p;
	cr.seed = (uint64_t)r->seed;
	cr.stop = (const char *const *)r->stop;
	cr.n_stop = r->n_stop;
	if (svc_chat(daemon_g->v, w->ss, &cr, &hk, &a, &st)) {
		if (st.step == SVC_AT_TOKENIZE && st.rc == SVC_ENG_ERR_CONTEXT)
			job_error(j, PROTO_E_TOO_LONG, "%s: shorten the conversation", st.why);
		else if (st.step == SVC_AT_TOKENIZE && st.rc == SVC_ENG_ERR_ARG)
			job_error(j, PROTO_E_BAD_REQUEST, "%s", st.why);
		else if (st.step == SVC_AT_TOKENIZE)
			job_error(j, PROTO_E_ENGINE, "cannot tokenize the prompt: %s", st.why);
		else
			job_error(j, PROTO_E_ENGINE, "generation failed: %s", st.why);
	} else if (a.cancelled)
		job_error(j, PROTO_E_CANCELLED, "chat cancelled after %lld tokens",
		    (long long)a.tokens);
	else {
		json_t *o = json_pack("{s:I, s:I, s:s, s:f, s:f}", "tokens", (json_int_t)a.tokens,
		    "prompt_tokens", (json_int_t)a.prompt_tokens, "stop", svc_stop_name(a.stop),
		    "ttft_s", a.ttft, "seconds", a.seconds);
		job_stop_sequence(o, r, &a);
		job_result(j, o);
	}
	free(msgs);
}
