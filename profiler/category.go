package profiler

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxCategory bounds a category's length in bytes: a -c program text can
// be long, and a category is a key in the profiler's file.
const MaxCategory = 256

// Category is the profiler's category of a command line: what makes two
// jobs the same program, whose earlier run times predict the next. It is
// argv[0] as given, and for a shell or an interpreter (argv[0]'s base name,
// less a version suffix such as 3.12, is one of interpreters) also what it
// runs: the script (its first argument that is not an option), the program
// text of -c or -e, or the module of -m. Otherwise every `sh -c …` job and
// every Python script would share one history. `env [NAME=value…] prog …`
// is the category of prog …. At most MaxCategory bytes; "" for no argv.
func Category(argv []string) string {
	for len(argv) > 0 && path.Base(argv[0]) == "env" {
		rest := argv[1:]
		for len(rest) > 0 && (strings.HasPrefix(rest[0], "-") || strings.Contains(rest[0], "=")) {
			skip := 1
			if rest[0] == "-u" || rest[0] == "--unset" || rest[0] == "-C" || rest[0] == "--chdir" {
				skip = 2 // and the option's value
			}
			rest = rest[min(skip, len(rest)):]
		}
		if len(rest) == 0 {
			break
		}
		argv = rest
	}
	if len(argv) == 0 {
		return ""
	}
	cat := argv[0]
	if in, ok := interpreters[interpreterName(argv[0])]; ok {
		if what := in.runs(argv[1:]); what != "" {
			cat += " " + what
		}
	}
	return clip(cat, MaxCategory)
}

// interpreter says how to find what a shell or interpreter runs in its
// arguments.
type interpreter struct {
	text   []string // options whose value is the program itself (-c 'sleep 40')
	named  []string // options whose value names what runs (-m module, -jar file)
	valued []string // other options that take the next word as their value
}

var (
	shell  = interpreter{text: []string{"-c"}, valued: []string{"-o", "+o", "-O", "+O"}}
	python = interpreter{text: []string{"-c"}, named: []string{"-m"}, valued: []string{"-W", "-X"}}
	// awk's first argument that is not an option is its program text.
	awk = interpreter{named: []string{"-f"}, valued: []string{"-F", "-v"}}
)

// interpreters are the shells and interpreters whose category includes what
// they run, by base name without a version suffix (interpreterName).
var interpreters = map[string]interpreter{
	"sh": shell, "bash": shell, "dash": shell, "ash": shell, "zsh": shell, "ksh": shell, "mksh": shell,
	"csh": shell, "tcsh": shell, "fish": shell,
	"python": python, "pypy": python,
	"perl":    {text: []string{"-e", "-E"}},
	"ruby":    {text: []string{"-e"}},
	"node":    {text: []string{"-e", "--eval", "-p", "--print"}, valued: []string{"-r", "--require"}},
	"nodejs":  {text: []string{"-e", "--eval", "-p", "--print"}, valued: []string{"-r", "--require"}},
	"Rscript": {text: []string{"-e"}},
	"php":     {text: []string{"-r"}, named: []string{"-f"}},
	"lua":     {text: []string{"-e"}, valued: []string{"-l"}},
	"luajit":  {text: []string{"-e"}, valued: []string{"-l"}},
	"tclsh":   {},
	"julia":   {text: []string{"-e", "-E"}, valued: []string{"-t", "--threads", "-p", "--procs"}},
	"awk":     awk, "gawk": awk, "mawk": awk, "nawk": awk,
	"java": {named: []string{"-jar"}, valued: []string{"-cp", "-classpath", "--class-path", "-p", "--module-path"}},
}

// interpreterName is argv0's base name without a version suffix:
// /usr/bin/python3.12 is python, perl5.36 perl.
func interpreterName(argv0 string) string {
	return strings.TrimRight(path.Base(argv0), "0123456789.")
}

// runs is what the interpreter runs, as it appears in args: "-c TEXT",
// "-m MODULE", or the script; "" when it reads its program from stdin.
func (in interpreter) runs(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case slices.Contains(in.text, a) || slices.Contains(in.named, a):
			if i+1 < len(args) {
				return a + " " + args[i+1]
			}
			return a
		case slices.Contains(in.valued, a):
			i++ // its value
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// An option. Combined short options ending in c (sh -ec TEXT,
			// python -Bc TEXT) take the text as -c does.
			if len(a) > 2 && a[1] != '-' && strings.HasSuffix(a, "c") && slices.Contains(in.text, "-c") && i+1 < len(args) {
				return "-c " + args[i+1]
			}
		default:
			return a
		}
	}
	return ""
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
