package web

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Errors shown to the browser name no absolute path: where the spool or
// anything else lives on the server's file system is none of a visitor's
// business, and helps an attacker. The page logs the error whole and shows
// it with every absolute path cut: one in the spool becomes relative to it
// ("<spool>/db/schedule.json"), any other keeps its last element
// (".../hosts.yaml"). Errors are built by many packages, so the cut is
// made on the message, not by each error's maker.

// absPath matches an absolute path in an error message: a slash at the
// start or after a space, quote, bracket or '=', up to a space, quote,
// bracket, colon, comma or semicolon (Go's errors put ": " after a path).
var absPath = regexp.MustCompile(`(^|[\s"'(\[=])(/[^\s"'()\[\]:;,]*)`)

// PublicMessage is err's message with every absolute path cut as above;
// spoolRoot is the spool's directory ("": none known).
func PublicMessage(err error, spoolRoot string) string {
	root := filepath.Clean(spoolRoot)
	return absPath.ReplaceAllStringFunc(err.Error(), func(m string) string {
		i := strings.IndexByte(m, '/')
		pre, p := m[:i], filepath.Clean(m[i:])
		switch {
		case spoolRoot != "" && p == root:
			return pre + "<spool>"
		case spoolRoot != "" && strings.HasPrefix(p, root+"/"):
			return pre + "<spool>/" + p[len(root)+1:]
		case p == "/":
			return pre + "/"
		}
		return pre + ".../" + filepath.Base(p)
	})
}

// public is err's message as the browser may see it.
func (h *handler) public(err error) string { return PublicMessage(err, h.cfg.Spool.Root()) }
