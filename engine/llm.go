package engine

import "context"

// LLM runs the model stage of a run: it sends the rendered prompt, lets the
// model call the hook's tools, and fills in the run's response, transcript
// and token counts. The LLM issue implements it; a nil LLM makes every
// hook that needs a model fail with a clear error.
type LLM interface {
	Complete(ctx context.Context, req *LLMRequest) error
}

// LLMRequest is one model stage of a run.
type LLMRequest struct {
	Hook   *Hook
	Run    *Run     // Prompt is set; Response, ToolCalls and Tokens are to be filled
	System string   // the hook's system message, redacted
	Env    *ToolEnv // what the hook's tools see; results sent to the model go through Env.Redact

	// Model is filled by the LLM when it calls the model: the model it
	// asked for, which the spend ledger prices. It stays empty when no
	// call was made.
	Model string
}
