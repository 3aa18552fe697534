/*
 * html.c: an HTML page's text with libxml2's HTML parser (recovering from
 * bad markup, no network, no messages): the title first, then the body's
 * text with white space collapsed, block elements and <br> as line breaks
 * (headings and paragraphs as blank lines), <pre> kept as it is, and
 * <script>, <style>, <template>, <noscript>, <svg> and the rest of <head>
 * dropped.  The walk is iterative: nesting 100000 elements deep costs no
 * stack (test_formats' deep case).  The page's elements and attributes are
 * counted first (html_scan.c); a page libxml2 stops reading part way (it
 * halts nested deeper than FMT_HTML_DEPTH_MAX) is refused saying so, never
 * read in part or called empty.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <libxml/HTMLparser.h>
#include <libxml/tree.h>

#include "common/fail.h"
#include "formats/formats.h"

/* Elements whose content is not text the reader sees. */
static int
html_skipped(const char *n)
{
	static const char *const skip[] = {
		"script", "style", "template", "noscript", "svg", "math", "head", "iframe",
		"object", "canvas", "select", "button",
	};
	size_t i;
	for (i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (!strcasecmp(n, skip[i]))
			return 1;
	return 0;
}

/* 2: a block with a blank line around it; 1: a line break; 0: inline. */
static int
html_block(const char *n)
{
	static const char *const para[] = {
		"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul",
		"ol", "dl", "section", "article", "header", "footer", "nav", "aside", "main",
		"figure", "form", "fieldset", "details", "address", "hr",
	};
	static const char *const line[] = {
		"br", "div", "li", "tr", "dt", "dd", "figcaption", "caption", "summary",
		"legend", "option", "body", "html",
	};
	size_t i;
	for (i = 0; i < sizeof(para) / sizeof(para[0]); i++)
		if (!strcasecmp(n, para[i]))
			return 2;
	for (i = 0; i < sizeof(line) / sizeof(line[0]); i++)
		if (!strcasecmp(n, line[i]))
			return 1;
	return 0;
}

/* The first <title>'s text. */
static void
html_title(xmlNode *n, struct fmt_buf *out)
{
	xmlNode *c;
	for (; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (!strcasecmp((const char *)n->name, "title")) {
			for (c = n->children; c; c = c->next)
				if (c->type == XML_TEXT_NODE && c->content)
					fmt_buf_text(out, (const char *)c->content,
					    strlen((const char *)c->content), 0);
			fmt_buf_break(out, 1);
			return;
		}
		if (!strcasecmp((const char *)n->name, "html") ||
		    !strcasecmp((const char *)n->name, "head")) {
			html_title(n->children, out);
			if (out->len)
				return;
		}
	}
}

/* Every text node in document order, without recursion: down into an
 * element's children, a line break after it on the way back up. */
static void
html_walk(xmlNode *root, struct fmt_buf *out)
{
	xmlNode *n = root;
	int pre = 0;

	while (n && !out->err) {
		const char *name = (const char *)n->name;
		int skip = 0;
		if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
			if (n->content)
				fmt_buf_text(out, (const char *)n->content,
				    strlen((const char *)n->content), pre > 0);
		} else if (n->type == XML_ELEMENT_NODE) {
			skip = html_skipped(name);
			if (!skip && html_block(name))
				fmt_buf_break(out, html_block(name) == 2);
			if (!skip && (!strcasecmp(name, "td") || !strcasecmp(name, "th")) &&
			    out->len && out->p[out->len - 1] != '\n')
				fmt_buf_put(out, "\t", 1); /* cells of a row apart */
			if (!skip && n->children) {
				if (!strcasecmp(name, "pre"))
					pre++; /* back down when the walk leaves it */
				n = n->children;
				continue;
			}
		}
		/* up until a node with a next sibling, closing blocks on the way */
		while (n && n != root && !n->next) {
			n = n->parent;
			if (n && n->type == XML_ELEMENT_NODE) {
				if (html_block((const char *)n->name))
					fmt_buf_break(out, html_block((const char *)n->name) == 2);
				if (!strcasecmp((const char *)n->name, "pre"))
					pre--;
			}
		}
		if (!n || n == root)
			break;
		n = n->next;
	}
}

int
fmt_html(const char *p, size_t len, const char *encoding, struct fmt_buf *out, char *why,
    size_t why_len)
{
	htmlParserCtxtPtr ctx;
	htmlDocPtr doc;
	xmlNode *root;
	int rc, halted;

	if (len > (size_t)INT32_MAX)
		return kv_fail(why, why_len, FMT_ERR_TOO_LARGE, "is too large for the HTML parser");
	if ((rc = fmt_html_scan(p, len, why, why_len)))
		return rc;
	if (!(ctx = htmlNewParserCtxt()))
		return kv_fail(why, why_len, FMT_ERR_NOMEM, "out of memory");
	doc = htmlCtxtReadMemory(ctx, p, (int)len, NULL, encoding, HTML_PARSE_NOERROR |
	    HTML_PARSE_NOWARNING | HTML_PARSE_NONET | HTML_PARSE_RECOVER | HTML_PARSE_NOBLANKS);
	/* recovering from bad markup goes on; a halt (the depth limit, a fatal
	 * error) drops the rest of the page */
	halted = ctx->instate == XML_PARSER_EOF && ctx->disableSAX;
	if (halted) {
		const xmlError *e = xmlCtxtGetLastError(ctx);
		int depth = e && e->message && strstr(e->message, "depth");
		char msg[128];
		snprintf(msg, sizeof(msg), "%s", e && e->message ? e->message : "no details");
		msg[strcspn(msg, "\r\n")] = '\0';
		if (doc)
			xmlFreeDoc(doc);
		htmlFreeParserCtxt(ctx);
		if (depth)
			return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is an HTML page nested over "
			    "%d elements deep, the limit: libxml2 reads no deeper", FMT_HTML_DEPTH_MAX);
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "is an HTML page libxml2 stopped "
		    "reading part way (%s)", msg);
	}
	htmlFreeParserCtxt(ctx);
	if (!doc || !(root = xmlDocGetRootElement(doc))) {
		if (doc)
			xmlFreeDoc(doc);
		return kv_fail(why, why_len, FMT_ERR_UNSUPPORTED,
		    "looks like HTML but libxml2 cannot parse it");
	}
	html_title(root, out);
	html_walk(root, out);
	xmlFreeDoc(doc);
	return fmt_buf_fail(out, "an HTML page", why, why_len);
}
