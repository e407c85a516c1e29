package command

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// complete answers a shell's completion request (bash's `complete -C`:
// COMP_LINE is the command line, COMP_POINT the cursor): the command or
// subcommand names that start with the word being typed, one per line.
func (c *cli) complete(line string, point int) int {
	if point >= 0 && point < len(line) {
		line = line[:point]
	}
	words := strings.Fields(line)
	if strings.HasSuffix(line, " ") || len(words) == 0 {
		words = append(words, "")
	}
	words = words[1:] // the program's name
	cmds := c.table()
	for len(words) > 1 {
		i := slices.IndexFunc(cmds, func(cmd entry) bool { return cmd.name == words[0] })
		if i < 0 || cmds[i].subs == nil {
			return 0 // past the command names: nothing to offer
		}
		cmds, words = cmds[i].subs, words[1:]
	}
	for _, cmd := range cmds {
		if strings.HasPrefix(cmd.name, words[0]) {
			fmt.Fprintln(c.stdout, cmd.name)
		}
	}
	return 0
}

// completionCLI holds `sched completion install`; answering the shell's
// requests is the base's (complete), as any command line may be one.
type completionCLI struct{ *cli }

func (c *completionCLI) table() []entry {
	return []entry{
		{"install", "Enable completion of sched's commands in bash and zsh", c.completionInstall, nil},
	}
}

const completionInstallHelp = `
Add to ~/.bashrc (and ~/.zshrc when it exists) the line that makes the
shell ask this binary to complete sched's commands and subcommands
(complete -C). Run it once; open a new shell afterwards.`

func (c *completionCLI) completionInstall(args []string) int {
	fs, _ := c.flagSet("completion install", "", completionInstallHelp)
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	home := c.getenv("HOME")
	if home == "" {
		fmt.Fprintln(c.stderr, "Error: HOME is not set")
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		return c.fail("finding this binary", err)
	}
	line := "complete -o default -C " + strconv.Quote(exe) + " sched"
	files := []struct{ name, text string }{{".bashrc", line}}
	if _, err := os.Stat(filepath.Join(home, ".zshrc")); err == nil {
		files = append(files, struct{ name, text string }{".zshrc", "autoload -U +X bashcompinit && bashcompinit\n" + line})
	}
	for _, f := range files {
		path := filepath.Join(home, f.name)
		old, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return c.fail("reading "+path, err)
		}
		if strings.Contains(string(old), line) {
			fmt.Fprintf(c.stdout, "Completion already installed in %s\n", path)
			continue
		}
		fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return c.fail("opening "+path, err)
		}
		_, err = fmt.Fprintf(fh, "\n# sched command completion\n%s\n", f.text)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return c.fail("writing "+path, err)
		}
		fmt.Fprintf(c.stdout, "Completion installed in %s\n", path)
	}
	return 0
}
