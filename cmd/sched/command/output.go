package command

import (
	"encoding/json"
	"flag"
	"fmt"
	"text/template"
)

// templateFlag is -t: a Go template the answer is printed through. Setting
// it also sets the command's -json switch, so every command that prints
// JSON prints through the template instead.
type templateFlag struct {
	tmpl *string
	json *bool
}

func (t templateFlag) String() string { return "" }

func (t templateFlag) Set(v string) error {
	if _, err := template.New("t").Parse(v); err != nil {
		return fmt.Errorf("not a Go template: %w", err)
	}
	*t.tmpl = v
	*t.json = true
	return nil
}

// outputFlags registers -json (with help text what) and -t on fs, for a
// read command; the returned switch is set by either. printJSON prints
// the answer as JSON, or through the -t template.
func (c *cli) outputFlags(fs *flag.FlagSet, what string) *bool {
	asJSON := fs.Bool("json", false, what)
	fs.Var(templateFlag{tmpl: &c.tmpl, json: asJSON}, "t", "print the answer through this Go `template` (e.g. '{{range .}}{{.ID}}{{\"\\n\"}}{{end}}'); the data is what -json prints")
	return asJSON
}

// printJSON prints v as indented JSON, or through the -t template, which
// sees v as its JSON decodes (field names as -json prints them).
func (c *cli) printJSON(v any) int {
	out, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return c.fail("formatting JSON", err)
	}
	if c.tmpl == "" {
		fmt.Fprintln(c.stdout, string(out))
		return 0
	}
	var data any
	if err := json.Unmarshal(out, &data); err != nil {
		return c.fail("formatting JSON", err)
	}
	t, err := template.New("t").Option("missingkey=zero").Parse(c.tmpl)
	if err != nil {
		return c.fail("parsing the template", err)
	}
	if err := t.Execute(c.stdout, data); err != nil {
		return c.fail("executing the template", err)
	}
	return 0
}
