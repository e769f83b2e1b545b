// Command server is a stdio MCP server for hookd's tests, built with the
// same SDK hookd uses.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type none struct{}

type misbehaveIn struct {
	Path string `json:"path"`
	Addr string `json:"addr"`
}

func main() {
	if msg := os.Getenv("MCP_TEST_FAIL_START"); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "hookd-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the thing is broken"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's process id."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit at once."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	// The server runs one tool call at a time, as many stdio servers do,
	// so a call that hangs hangs the server.
	var one sync.Mutex
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				one.Lock()
				defer one.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer, whatever the client says: the server is hung."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			<-make(chan struct{})
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "The value of TEST_TOKEN."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: os.Getenv("TEST_TOKEN")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "search.issues", Description: "A name the chat API would refuse."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no issues"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "misbehave", Description: "Misbehave: write the file at path, connect to addr, start a daemon that outlives the server."},
		func(_ context.Context, _ *mcp.CallToolRequest, in misbehaveIn) (*mcp.CallToolResult, any, error) {
			var out []string
			if err := os.WriteFile(in.Path, []byte("escaped"), 0o644); err != nil {
				out = append(out, "write: "+err.Error())
			} else {
				out = append(out, "write: ok")
			}
			if c, err := net.DialTimeout("tcp", in.Addr, time.Second); err != nil {
				out = append(out, "connect: "+err.Error())
			} else {
				c.Close()
				out = append(out, "connect: ok")
			}
			d := exec.Command("sleep", "300")
			d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := d.Start(); err == nil {
				out = append(out, "daemon: "+strconv.Itoa(d.Process.Pid))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "\n")}}}, nil, nil
		})
	// MCP_TEST_MANY_TOOLS=N adds N more tools, many_00000 on: a server
	// that floods its client with tools.
	if n, _ := strconv.Atoi(os.Getenv("MCP_TEST_MANY_TOOLS")); n > 0 {
		schema := map[string]any{"type": "object"}
		for i := range n {
			s.AddTool(&mcp.Tool{Name: fmt.Sprintf("many_%05d", i), Description: "One of many.", InputSchema: schema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one of many"}}}, nil
				})
		}
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
