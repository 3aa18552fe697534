/*
 * markdown.c: a Markdown file's text with cmark (CommonMark): the AST
 * walked in order, markup dropped.  Headings, paragraphs, code blocks,
 * quotes and lists end in line breaks; list items keep a "- " or "N. "
 * (their order is part of the text); links and images keep their text (an
 * image its alt text), not the target; raw HTML is dropped; a soft break
 * is a space.
 */
#include <stdio.h>
#include <string.h>

#include <cmark.h>

#include "common/fail.h"
#include "formats/formats.h"

#define MD_DEPTH 64 /* nesting of lists whose numbers are kept */

static void
md_literal(cmark_node *n, struct fmt_buf *out, int pre)
{
	const char *s = cmark_node_get_literal(n);
	if (s)
		fmt_buf_text(out, s, strlen(s), pre);
}

int
fmt_markdown(const char *p, size_t len, struct fmt_buf *out, char *why, size_t why_len)
{
	cmark_node *doc = cmark_parse_document(p, len, CMARK_OPT_DEFAULT), *n;
	cmark_event_type ev;
	cmark_iter *it;
	int num[MD_DEPTH], depth = 0; /* the next number of each open list; -1: bullets */
	char mark[32];

	if (!doc || !(it = cmark_iter_new(doc))) {
		if (doc)
			cmark_node_free(doc);
		return kv_fail(why, why_len, FMT_ERR_NOMEM, "out of memory");
	}
	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE && !out->err) {
		int enter = ev == CMARK_EVENT_ENTER;
		n = cmark_iter_get_node(it);
		switch (cmark_node_get_type(n)) {
		case CMARK_NODE_TEXT:
			md_literal(n, out, 0);
			break;
		case CMARK_NODE_CODE:
			md_literal(n, out, 1);
			break;
		case CMARK_NODE_CODE_BLOCK:
			fmt_buf_break(out, 1);
			md_literal(n, out, 1);
			fmt_buf_break(out, 1);
			break;
		case CMARK_NODE_SOFTBREAK:
			fmt_buf_put(out, " ", 1);
			break;
		case CMARK_NODE_LINEBREAK:
			fmt_buf_break(out, 0);
			break;
		case CMARK_NODE_PARAGRAPH:
			/* a tight list's paragraphs are its items' lines */
			if (!enter)
				fmt_buf_break(out, !(cmark_node_parent(n) &&
				    cmark_node_get_type(cmark_node_parent(n)) == CMARK_NODE_ITEM &&
				    cmark_node_get_list_tight(cmark_node_parent(cmark_node_parent(n)))));
			break;
		case CMARK_NODE_HEADING:
		case CMARK_NODE_BLOCK_QUOTE:
		case CMARK_NODE_THEMATIC_BREAK:
			fmt_buf_break(out, 1);
			break;
		case CMARK_NODE_LIST:
			if (enter) {
				fmt_buf_break(out, 0);
				if (depth < MD_DEPTH)
					num[depth] = cmark_node_get_list_type(n) == CMARK_ORDERED_LIST ?
					    cmark_node_get_list_start(n) : -1;
				depth++;
			} else {
				depth--;
				fmt_buf_break(out, 1);
			}
			break;
		case CMARK_NODE_ITEM:
			if (!enter) {
				fmt_buf_break(out, 0);
				break;
			}
			fmt_buf_break(out, 0);
			if (depth >= 1 && depth <= MD_DEPTH && num[depth - 1] >= 0)
				snprintf(mark, sizeof(mark), "%d. ", num[depth - 1]++);
			else
				snprintf(mark, sizeof(mark), "- ");
			fmt_buf_put(out, mark, strlen(mark));
			break;
		case CMARK_NODE_NONE:
		case CMARK_NODE_DOCUMENT:
		case CMARK_NODE_HTML_BLOCK:
		case CMARK_NODE_CUSTOM_BLOCK:
		case CMARK_NODE_HTML_INLINE:
		case CMARK_NODE_CUSTOM_INLINE:
		case CMARK_NODE_EMPH:
		case CMARK_NODE_STRONG:
		case CMARK_NODE_LINK:
		case CMARK_NODE_IMAGE:
			break;
		}
	}
	cmark_iter_free(it);
	cmark_node_free(doc);
	return fmt_buf_fail(out, "Markdown", why, why_len);
}
