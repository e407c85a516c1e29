package taskinput

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// TemplateEnv reads the rendered templates of in.Task that have Envvars
// set and returns the variables they define, for the task runner to add
// to the task's environment (later templates win). Each file holds
// KEY=VALUE lines; blank lines and lines starting with # are skipped, an
// "export " prefix is allowed, and a value wrapped in matching single or
// double quotes loses them. Call it after RenderTemplates.
func TemplateEnv(in *Input) (map[string]string, error) {
	out := map[string]string{}
	if in.Task == nil {
		return out, nil
	}
	for _, t := range in.Task.Templates {
		if t == nil || !t.Envvars {
			continue
		}
		p, err := insideDir(in.TaskDir, t.DestPath)
		if err != nil {
			return nil, &TemplateError{DestPath: t.DestPath, Err: err}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, &TemplateError{DestPath: t.DestPath, Err: err}
		}
		if err := parseEnvFile(b, out); err != nil {
			return nil, &TemplateError{DestPath: t.DestPath, Err: err}
		}
	}
	return out, nil
}

// parseEnvFile adds the KEY=VALUE lines of b to env.
func parseEnvFile(b []byte, env map[string]string) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	return sc.Err()
}
