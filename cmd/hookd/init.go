package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/hookd/hookd/config"
)

// cmdInit makes a new project: hookd.yaml with the model settings of the
// server chosen by flag, and hooks.d with one check-then-ask hook.
func cmdInit(c *cli, args []string) int {
	set := flag.NewFlagSet("hookd init", flag.ContinueOnError)
	set.SetOutput(c.stderr)
	ollama := set.Bool("ollama", false, "ask Ollama on this machine (http://127.0.0.1:11434/v1)")
	llamaCpp := set.String("llama-cpp", "", "ask the llama.cpp server (llama-server --jinja) at this address, like http://127.0.0.1:8080")
	openai := set.Bool("openai", false, "ask OpenAI's API, with the key in $"+config.DefaultAPIKeyEnv)
	model := set.String("model", "", fmt.Sprintf("the model to ask (default %s for Ollama, %s for OpenAI; a llama.cpp server answers with its own)",
		config.DefaultOllamaModel, config.DefaultOpenAIModel))
	set.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: hookd init %s\n", c.argsHelp)
		set.PrintDefaults()
	}
	pos, code, ok := c.parse(set, args, 0, 1)
	if !ok {
		return code
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	chosen := 0
	for _, on := range []bool{*ollama, *llamaCpp != "", *openai} {
		if on {
			chosen++
		}
	}
	if chosen != 1 {
		what := "which model server the project asks"
		if chosen > 1 {
			what = "one model server, not " + fmt.Sprint(chosen)
		}
		fmt.Fprintf(c.stderr, "hookd init: choose %s:\n"+
			"  --llama-cpp URL   a llama.cpp server (llama-server -m MODEL.gguf --jinja --port 8080): hookd init --llama-cpp http://127.0.0.1:8080\n"+
			"  --ollama          Ollama on this machine (ollama serve; ollama pull %s)\n"+
			"  --openai          OpenAI's API, with the key in $%s\n"+
			"(--model NAME names another model; hookd.yaml's llm: can be edited later)\n",
			what, config.DefaultOllamaModel, config.DefaultAPIKeyEnv)
		return exitUsage
	}
	var server config.ModelServer
	switch {
	case *ollama:
		server = config.OllamaServer(*model)
	case *openai:
		server = config.OpenAIServer(*model)
	default:
		s, err := config.LlamaCppServer(*llamaCpp, *model)
		if err != nil {
			fmt.Fprintf(c.stderr, "hookd init: %v\n", err)
			return exitUsage
		}
		server = s
	}
	files := config.Starter(server)
	if err := config.WriteStarter(c.path(dir), files); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(err, fs.ErrExist) {
			// The error names the file in c's directory; say it as typed.
			for _, f := range files {
				if rel := filepath.FromSlash(f.Path); pe.Path == filepath.Join(c.path(dir), rel) {
					return c.errorf("%s exists; init makes a new project and overwrites nothing (choose another directory, or move it away)", filepath.Join(dir, rel))
				}
			}
		}
		return c.errorf("%v", err)
	}
	where := "here"
	if dir != "." {
		where = "in " + dir
	}
	fmt.Fprintf(c.stdout, "Made a hookd project %s:\n", where)
	fmt.Fprintf(c.stdout, "  %-20s the model: %s at %s (%s)\n", files[0].Path, server.Model, server.BaseURL, server.Name)
	fmt.Fprintf(c.stdout, "  %-20s a check (grep finds the TODO and FIXME notes), then a question to the model only when it found one\n", files[1].Path)
	fmt.Fprintln(c.stdout, "\nNext:")
	if dir != "." {
		fmt.Fprintf(c.stdout, "  cd %s\n", dir)
	}
	if server.Setup != "" && (server.KeyEnv == "" || c.env(server.KeyEnv) == "") {
		fmt.Fprintf(c.stdout, "  %s\n", server.Setup)
	}
	fmt.Fprintf(c.stdout, "  hookd validate                  # the settings and the hook load\n")
	fmt.Fprintf(c.stdout, "  hookd serve &                   # the daemon (or in a terminal of its own)\n")
	fmt.Fprintf(c.stdout, "  hookd fire %s --wait         # run the hook now and wait for the model's answer\n", config.StarterHook)
	fmt.Fprintf(c.stdout, "\nWithout a model: hookd render %s prints the prompt the hook would send; "+
		"where grep finds no TODO or FIXME, a run stops before the model (completed, model not needed).\n", config.StarterHook)
	return exitOK
}
