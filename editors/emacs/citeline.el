;;; citeline.el --- Find and cite Markdown sections via citeline -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The citeline authors

;; Author: The citeline authors
;; Maintainer: The citeline authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, matching, docs, convenience
;; SPDX-License-Identifier: MIT

;; This file is not part of GNU Emacs.

;;; Commentary:

;; citeline finds the section of a Markdown workspace that answers a
;; question, and cites it: path, line range, a verbatim snippet.  This
;; package connects Emacs to `citeline lsp' through Eglot:
;;
;; - it registers the server in `eglot-server-programs' for the modes in
;;   `citeline-major-modes' (markdown-mode, gfm-mode, markdown-ts-mode),
;;   so `M-x eglot' or `eglot-ensure' in a Markdown buffer starts it;
;; - `citeline-search' asks for a query and shows the ranked sections in
;;   an *xref* buffer, in the server's order;
;; - `citeline-lines' (with \\[universal-argument]: an RE2 regex, or
;;   `citeline-grep') lists matching lines with their columns;
;; - `citeline-semantic' lists the sections that answer a question by
;;   meaning (other words, another language), each with its score; it
;;   needs the server's semantic extra (pip install 'citeline[semantic]'),
;;   as does `citeline-profile' "hybrid";
;; - `citeline-concepts' lists the files whose concept id or title
;;   contains the text;
;; - after a search, saving a Markdown buffer or Emacs gaining focus
;;   checks its hits again (`citeline-verify' by hand): the hits whose
;;   text moved, changed or went away are marked in the *xref* buffer,
;;   and `citeline-reanchor' jumps to where the text is now.
;;
;; Eglot's own features work as usual: `xref-find-apropos' (C-M-.) asks
;; the server's workspace/symbol, and `imenu' shows the heading outline.
;;
;; Quick start:
;;
;;   (require 'citeline)
;;   (add-hook 'markdown-mode-hook #'eglot-ensure)
;;
;; The workspace of a Markdown file is, first match: a folder chosen with
;; `citeline-set-workspace' or `citeline-workspace-roots'; the nearest
;; folder holding one of `citeline-project-markers' (default ".citeline");
;; the version-control root; the folder Emacs was started in, when it
;; holds the file and is not ~ or above; a folder asked for when you type
;; M-x eglot (`citeline-ask-workspace'); the file's folder.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'seq)
(require 'subr-x)
(require 'xref)

(defgroup citeline nil
  "Find and cite Markdown sections with the citeline language server."
  :group 'tools
  :prefix "citeline-")

(defcustom citeline-server-command '("citeline" "lsp")
  "Command (program and arguments) that starts the citeline language server."
  :type '(repeat string))

(defcustom citeline-settings nil
  "Server settings: a plist sent as initializationOptions and configuration.
Keys: :limits (plist, e.g. (:max_files 20000)), :reserved (a vector of
file names), :use_ignore, :skip_invalid (t or :json-false), :symbols
\(plist with :cap and :list_cap), :profile (\"contract\" or \"recall\")
and :unsaved (see `citeline-unsaved').
Example: (:profile \"recall\" :symbols (:cap 50) :reserved [\"index.md\"])."
  :type '(plist :key-type symbol :value-type sexp))

(defun citeline--set-unsaved (symbol value)
  "Set SYMBOL to VALUE and tell the running citeline servers."
  (let ((changed (and (boundp symbol)
                      (not (eq (and (symbol-value symbol) t) (and value t))))))
    (set-default symbol value)
    (when (and changed (fboundp 'citeline--servers))
      (dolist (server (citeline--servers))
        (citeline--push-settings server t)))))

(defcustom citeline-unsaved nil
  "Non-nil: searches and symbols read open buffers, unsaved edits included.
The server then searches what the Markdown buffers it manages hold
instead of the files on disk, and hits from such buffers are marked
\"[unsaved]\".  nil (the default): every search reads the files on
disk.  Sent as the server setting `unsaved'; setting it with
`customize' or `setopt' tells running servers at once.  An :unsaved key
in `citeline-settings' takes precedence."
  :type 'boolean
  :set #'citeline--set-unsaved)

(defcustom citeline-profile "recall"
  "Relevance profile sent by `citeline-search'.
\"recall\", \"contract\", or \"hybrid\": recall reranked by meaning, which
needs the server's semantic extra (pip install 'citeline[semantic]'; without
it the search fails with a message naming it).  nil sends none, so the
server's settings (or the contract) decide."
  :type '(choice (const "recall") (const "contract") (const "hybrid")
                 (const :tag "Server default" nil)))

(defcustom citeline-semantic-threshold 0.5
  "Least score (0-1) of the sections `citeline-semantic' shows."
  :type 'number)

(defcustom citeline-search-limit 20
  "Number of sections `citeline-search' asks for (1-100)."
  :type 'integer)

(defcustom citeline-lines-limit 100
  "Number of matches `citeline-lines' asks for (1-1000)."
  :type 'integer)

(defcustom citeline-lines-context 2
  "Context lines `citeline-lines' asks for (0-10)."
  :type 'integer)

(defcustom citeline-lines-case-sensitive t
  "Whether `citeline-lines' matches case-sensitively."
  :type 'boolean)

(defcustom citeline-concepts-limit 20
  "Number of concepts `citeline-concepts' asks for (1-100)."
  :type 'integer)

(defcustom citeline-request-timeout 60
  "Seconds to wait for the server to answer a command."
  :type 'number)

(defcustom citeline-project-markers '(".citeline")
  "Files or folders marking a citeline workspace root for Eglot.
The nearest folder above a file holding one of them becomes the project
root when Eglot looks for a project.  nil disables this."
  :type '(repeat string))

(defcustom citeline-show-xrefs-function #'xref--show-xref-buffer
  "Function showing citeline results, called like `xref-show-xrefs-function'.
The default lists them in an *xref* buffer in the server's order.  nil
uses your `xref-show-xrefs-function'."
  :type '(choice (const :tag "Ordered *xref* buffer" xref--show-xref-buffer)
                 (const :tag "Use `xref-show-xrefs-function'" nil)
                 function))

(defvar citeline-last-result nil
  "The last result object (a plist) returned by a citeline command.")

(defvar citeline-search-history nil)
(defvar citeline-lines-history nil)
(defvar citeline-concepts-history nil)
(defvar citeline-semantic-history nil)

;;;; Eglot registration

(defclass citeline-eglot-server (eglot-lsp-server) ()
  :documentation "An Eglot connection to `citeline lsp'.")

(defun citeline-server-settings (&optional explicit)
  "The server settings: `citeline-settings' with `citeline-unsaved' added.
The :unsaved key is sent when `citeline-unsaved' is on, or with EXPLICIT
\(then as :json-false when off, to switch it off in a running server);
it is left out otherwise, which means off."
  (if (plist-member citeline-settings :unsaved)
      citeline-settings
    (append citeline-settings
            (cond (citeline-unsaved (list :unsaved t))
                  (explicit (list :unsaved :json-false))))))

(cl-defmethod eglot-initialization-options ((_server citeline-eglot-server))
  "Send `citeline-server-settings' as initializationOptions."
  (or (citeline-server-settings) (make-hash-table)))

(defun citeline--push-settings (server &optional explicit)
  "Send `citeline-server-settings' to SERVER in workspace/didChangeConfiguration.
Eglot sends `eglot-workspace-configuration' (usually empty) right after
connecting, which would reset the settings given at initialization;
this runs after it.  A :citeline section in `eglot-workspace-configuration'
takes precedence and is left alone.  EXPLICIT: see `citeline-server-settings'."
  (let ((settings (citeline-server-settings explicit)))
    (when (and (cl-typep server 'citeline-eglot-server)
               settings
               (not (plist-member (ignore-errors (eglot--workspace-configuration-plist server))
                                  :citeline)))
      (jsonrpc-notify server :workspace/didChangeConfiguration
                      (list :settings (list :citeline settings))))))

(add-hook 'eglot-connect-hook #'citeline--push-settings t)

;;;###autoload
(defun citeline-eglot-contact (&optional _interactive)
  "Eglot contact for citeline: the server class and `citeline-server-command'."
  (cons 'citeline-eglot-server citeline-server-command))

(defun citeline--register (modes)
  "Put MODES first in `eglot-server-programs', served by `citeline-eglot-contact'."
  (setq eglot-server-programs
        (cons (cons modes #'citeline-eglot-contact)
              (cl-remove-if (lambda (entry) (eq (cdr-safe entry) #'citeline-eglot-contact))
                            eglot-server-programs))))

(defcustom citeline-major-modes '(markdown-mode gfm-mode markdown-ts-mode)
  "Major modes whose buffers Eglot serves with citeline."
  :type '(repeat symbol)
  :set (lambda (sym val)
         (set-default sym val)
         (when (boundp 'eglot-server-programs)
           (citeline--register val))))

;;;###autoload
(with-eval-after-load 'eglot
  (unless (rassq 'citeline-eglot-contact eglot-server-programs)
    (add-to-list 'eglot-server-programs
                 '((markdown-mode gfm-mode markdown-ts-mode) . citeline-eglot-contact))))

(citeline--register citeline-major-modes)

;;;; The workspace root

;; Eglot serves a buffer with the project `project-current' finds while
;; `eglot-lsp-context' is bound, and falls back to the buffer's own folder
;; when there is none.  citeline's rule for a Markdown buffer, first match:
;; 1. a folder the user chose (`citeline-workspace-roots',
;;    `citeline-set-workspace'), the deepest one holding the file;
;; 2. the nearest folder holding one of `citeline-project-markers';
;; 3. the version-control root (project.el's own `project-try-vc');
;; 4. the folder Emacs was started in, when it holds the file and is neither
;;    the home folder nor above it (a launcher starts Emacs in ~);
;; 5. with `M-x eglot' typed: a folder asked for (`citeline-ask-workspace');
;; 6. the file's folder (Eglot's own fallback).

(defcustom citeline-workspace-roots nil
  "Folders that are citeline workspaces, whatever version control says.
A Markdown file under one of them is served with that folder as the
workspace root (the deepest of them holding it), before
`citeline-project-markers' and the version-control root.
`citeline-set-workspace' adds one for the session only."
  :type '(repeat directory))

(defcustom citeline-ask-workspace t
  "Whether \\[eglot] asks for the workspace of a Markdown file in no project.
Asked when the file is in no version-controlled project, under no
`citeline-project-markers' file and not under the folder Emacs was
started in; the answer (the file's folder by default) is remembered for
the session, as with `citeline-set-workspace'.  nil, or `eglot-ensure'
starting the server: no question, the workspace is the file's folder."
  :type 'boolean)

(defvar citeline--session-roots nil
  "Workspace folders chosen in this session, newest first.")

(defun citeline--folder (dir)
  "DIR as an absolute directory name."
  (file-name-as-directory (expand-file-name dir)))

(defun citeline--markdown-buffer-p ()
  "Non-nil in a buffer of one of `citeline-major-modes'."
  (cl-some (lambda (mode) (provided-mode-derived-p major-mode mode)) citeline-major-modes))

(defun citeline--chosen-root (dir)
  "The deepest chosen workspace folder holding DIR, or nil.
Chosen: in `citeline-workspace-roots' or by `citeline-set-workspace'."
  (let (best)
    (dolist (root (append citeline--session-roots citeline-workspace-roots))
      (let ((root (citeline--folder root)))
        (when (and (file-in-directory-p dir root)
                   (or (null best) (> (length root) (length best))))
          (setq best root))))
    best))

(defun citeline--marker-root (dir)
  "The nearest folder above DIR holding one of `citeline-project-markers'."
  (let ((root (cl-some (lambda (marker) (locate-dominating-file dir marker))
                       citeline-project-markers)))
    (and root (citeline--folder root))))

(defun citeline--started-in (dir)
  "The folder Emacs was started in, when it holds DIR.
Not when it is the home folder or above it: started from a launcher or
a desktop session, Emacs is in ~, which is no one's workspace."
  (let ((start (and command-line-default-directory
                    (citeline--folder command-line-default-directory))))
    (when (and start
               (file-in-directory-p dir start)
               (not (file-in-directory-p (citeline--folder "~") start)))
      start)))

(defun citeline--ask-root (dir)
  "Ask for the workspace of the file in DIR when \\[eglot] was typed there.
The answer must hold DIR; it is remembered for the session."
  (when (and citeline-ask-workspace
             (not noninteractive)
             (eq this-command 'eglot)
             buffer-file-name
             ;; M-x eglot then looks for a server in every buffer: ask in the one
             ;; it was typed in only.
             (eq (current-buffer) (window-buffer (selected-window))))
    (let ((root (citeline--folder
                 (read-directory-name "citeline workspace (no project holds this file): "
                                      dir dir t))))
      (unless (file-in-directory-p dir root)
        (user-error "citeline: the workspace must hold %s" buffer-file-name))
      (push root citeline--session-roots)
      root)))

(defun citeline--project-find (dir)
  "The citeline workspace of DIR chosen by the user, or under a marker.
For `project-find-functions', in an LSP context (`eglot-lsp-context'):
rules 1 and 2 of the workspace root, before the version-control root."
  (when (bound-and-true-p eglot-lsp-context)
    (let ((root (or (and (citeline--markdown-buffer-p) (citeline--chosen-root dir))
                     (and citeline-project-markers (citeline--marker-root dir)))))
      (when root (cons 'citeline root)))))

(defun citeline--project-fallback (dir)
  "The citeline workspace of a Markdown buffer in DIR that no project holds.
For the end of `project-find-functions', in an LSP context: the folder
Emacs was started in, or (\\[eglot] typed) one asked for; nil leaves
Eglot's own fallback, the file's folder."
  (when (and (bound-and-true-p eglot-lsp-context) (citeline--markdown-buffer-p))
    (let ((root (or (citeline--started-in dir) (citeline--ask-root dir))))
      (when root (cons 'citeline root)))))

(cl-defmethod project-root ((project (head citeline)))
  "The root of a citeline PROJECT."
  (cdr project))

(add-hook 'project-find-functions #'citeline--project-find)
(add-hook 'project-find-functions #'citeline--project-fallback t)

(defun citeline--say-workspace (server)
  "Tell the user when SERVER's workspace is only the file's folder.
That is Eglot's fallback when no rule of the workspace root applied."
  (when (and (cl-typep server 'citeline-eglot-server)
             (eq (car-safe (eglot--project server)) 'transient))
    (message "citeline: no project holds this file; the workspace is %s %s"
             (citeline--server-root server) "(M-x citeline-set-workspace to choose another)")))

(add-hook 'eglot-connect-hook #'citeline--say-workspace t)

;;;; Talking to the server

(defun citeline--servers ()
  "All live citeline Eglot servers, current project's first."
  (let* ((project (ignore-errors (eglot--current-project)))
         (own (and project (gethash project eglot--servers-by-project)))
         (all (apply #'append (hash-table-values eglot--servers-by-project))))
    (cl-remove-if-not (lambda (s) (and (cl-typep s 'citeline-eglot-server)
                                       (jsonrpc-running-p s)))
                      (delete-dups (append own all)))))

(defun citeline-server ()
  "The citeline Eglot server for the current buffer, or a `user-error'."
  (let ((current (ignore-errors (eglot-current-server))))
    (or (and current (cl-typep current 'citeline-eglot-server) current)
        (car (citeline--servers))
        (user-error "No citeline server is running: %s"
                    "open a Markdown file of the workspace and run M-x eglot"))))

(defun citeline--server-root (server)
  "The workspace folder of SERVER, as an absolute directory name."
  (file-name-as-directory (expand-file-name (project-root (eglot--project server)))))

(defun citeline-error-message (err)
  "Readable text of the `jsonrpc-error' ERR, preferring citeline's error envelope.
An optional extra the server lacks (semantic mode, the hybrid profile) is
named by the message alone: its code, schema_validation, would mislead."
  (let* ((data (cdr err))
         (rpc-data (and (listp data) (cdr (assq 'jsonrpc-error-data data))))
         (rpc-message (and (listp data) (cdr (assq 'jsonrpc-error-message data))))
         (envelope (if (plist-member rpc-data :error) (plist-get rpc-data :error) rpc-data))
         (message (and (listp envelope) (plist-get envelope :message)))
         (code (and (listp envelope) (plist-get envelope :code)))
         (details (and (listp envelope) (plist-get envelope :details)))
         (missing-extra (and (listp details) (stringp (plist-get details :install)))))
    (cond (message (if (and (stringp code) (not missing-extra))
                       (format "%s [%s]" message code)
                     message))
          (rpc-message (format "%s" rpc-message))
          (t (error-message-string err)))))

(defun citeline--flush-changes (server)
  "Send SERVER the edits Eglot still holds back for its buffers.
Eglot sends didChange after an idle delay, and before its own requests
only; a citeline command must see the text as it is now
\(`citeline-unsaved', diagnostics)."
  (when (fboundp 'eglot--signal-textDocument/didChange)
    (dolist (buffer (ignore-errors (eglot--managed-buffers server)))
      (when (buffer-live-p buffer)
        (with-current-buffer buffer
          (when (bound-and-true-p eglot--recent-changes)
            (ignore-errors (eglot--signal-textDocument/didChange))))))))

(defun citeline-execute (command args &optional server)
  "Run citeline COMMAND with request plist ARGS on SERVER; return the result.
The result is a plist.  The workspace folder of SERVER is sent as
`:root'.  Server errors become `user-error's showing the message of the
error envelope."
  (let* ((server (or server (citeline-server)))
         (args (if (plist-member args :root)
                   args
                 (append args (list :root (eglot--path-to-uri (citeline--server-root server)))))))
    (citeline--flush-changes server)
    (condition-case err
        (setq citeline-last-result
              (jsonrpc-request server :workspace/executeCommand
                               (list :command command :arguments (vector args))
                               :timeout citeline-request-timeout))
      (jsonrpc-error
       (user-error "citeline: %s" (citeline-error-message err))))))

;;;; Results as xref items

(cl-defstruct (citeline-location
               (:include xref-file-location)
               (:constructor citeline--make-location (file line column group)))
  "A file location whose group keeps the server's order in *xref* buffers."
  group)

(cl-defmethod xref-location-group ((l citeline-location))
  "The display group of L: its path, numbered when the file comes back later."
  (citeline-location-group l))

(defun citeline--groups (paths)
  "Group labels for PATHS in order.
Consecutive entries of one file share a label; a file that comes back
after another gets a new label \"path (2)\", so grouping keeps the order."
  (let ((seen (make-hash-table :test #'equal)) prev label out)
    (dolist (path paths)
      (unless (equal path prev)
        (let ((n (1+ (gethash path seen 0))))
          (puthash path n seen)
          (setq label (if (= n 1) path (format "%s (%d)" path n)))))
      (setq prev path)
      (push label out))
    (nreverse out)))

(defun citeline--byte-to-char (string byte)
  "Character offset in STRING of the UTF-8 byte offset BYTE."
  (let ((bytes (encode-coding-string string 'utf-8 t)))
    (length (decode-coding-string (substring bytes 0 (min byte (length bytes))) 'utf-8 t))))

(defun citeline--heading-line-p (line heading)
  "Non-nil when LINE is a line of the section's heading.
That is an ATX heading, a Setext underline, or one of the lines of
HEADING (a Setext heading may span several lines)."
  (let ((s (string-trim line)))
    (or (string-match-p "\\`#+\\([ \t]\\|\\'\\)" s)
        (string-match-p "\\`\\(=+\\|-+\\)\\'" s)
        (and (not (string-empty-p s))
             (member s (mapcar #'string-trim (split-string heading "\r?\n")))))))

(defun citeline--snippet-line (snippet heading spans)
  "The snippet line shown next to HEADING, highlighted from SPANS.
The first non-blank line of SNIPPET that is not the heading line; SPANS
are the hit's match_spans (UTF-8 byte offsets into SNIPPET)."
  (let ((pos 0) (len (length snippet)) found)
    (while (and (not found) (<= pos len))
      (let* ((eol (or (string-search "\n" snippet pos) len))
             (line (string-trim-right (substring snippet pos eol) "\r")))
        (if (and (not (string-blank-p line))
                 (not (citeline--heading-line-p line heading)))
            (setq found (cons pos line))
          (setq pos (1+ eol)))))
    (when found
      (let* ((start (car found))
             (line (cdr found))
             (indent (- (length line) (length (string-trim-left line))))
             (text (string-trim line)))
        (seq-doseq (span spans)
          (let ((b (- (citeline--byte-to-char snippet (plist-get span :start)) start indent))
                (e (- (citeline--byte-to-char snippet (plist-get span :end)) start indent)))
            (setq b (max b 0) e (min e (length text)))
            (when (< b e)
              (add-face-text-property b e 'xref-match t text))))
        (citeline-display text)))))

(defun citeline-display (text)
  "TEXT on one line: each line break (CRLF, LF or a lone CR) becomes a space.
Headings may hold them (a Setext heading over two lines), and so may
titles and line texts."
  (replace-regexp-in-string "\r\n\\|[\r\n]" " " (or text "") t t))

(defconst citeline-unsaved-mark "[unsaved]"
  "Shown before a hit that comes from a buffer's unsaved text.")

(defun citeline--unsaved-p (hit)
  "Non-nil when HIT (a plist) comes from unsaved buffer text."
  (or (eq (plist-get hit :unsaved) t) (eq (plist-get hit :x-unsaved) t)))

(defun citeline--mark-unsaved (hit text)
  "TEXT, preceded by `citeline-unsaved-mark' when HIT comes from unsaved text."
  (if (citeline--unsaved-p hit)
      (concat (propertize citeline-unsaved-mark 'face 'warning) " " text)
    text))

(defun citeline--file (root path)
  "Absolute file name of the bundle-relative PATH under ROOT."
  (expand-file-name path root))

(defun citeline-search-xrefs (result root)
  "Xref items for the citeline.search RESULT plist, files under ROOT, in order.
A hit is named by the server's label for it (`:x-labels', asked for with
`:labels' t: the heading; for the text before a file's first heading the
file's title, else its path, as workspace/symbol names it), else by its
heading, else by its path."
  (let* ((hits (append (plist-get result :hits) nil))
         (labels (append (plist-get result :x-labels) nil))
         (groups (citeline--groups (mapcar (lambda (h) (plist-get h :path)) hits))))
    (cl-mapcar
     (lambda (hit group)
       (let* ((heading (or (plist-get hit :heading) ""))
              (label (pop labels))
              (title (cond ((and (stringp label) (not (string-empty-p label)))
                            (citeline-display label))
                           ((string-empty-p heading) (plist-get hit :path))
                           (t (citeline-display heading))))
              (line (citeline--snippet-line (or (plist-get hit :snippet) "") heading
                                            (plist-get hit :match_spans)))
              (summary (concat (propertize title 'face 'bold)
                               (if (and line (not (string-empty-p line))) (concat " — " line) "")
                               (propertize (format "  (L%d-L%d)" (plist-get hit :line_start)
                                                   (plist-get hit :line_end))
                                           'face 'shadow))))
         (xref-make (citeline--mark-unsaved hit summary)
                    (citeline--make-location (citeline--file root (plist-get hit :path))
                                             (plist-get hit :line_start) 0 group))))
     hits groups)))

(defun citeline-lines-xrefs (result root)
  "Xref items for the citeline.lines RESULT plist, files under ROOT, with columns."
  (let* ((matches (append (plist-get result :matches) nil))
         (groups (citeline--groups (mapcar (lambda (m) (plist-get m :path)) matches))))
    (cl-mapcar
     (lambda (m group)
       (xref-make (citeline--mark-unsaved m (citeline-display (plist-get m :text)))
                  (citeline--make-location (citeline--file root (plist-get m :path))
                                           (plist-get m :line)
                                           ;; 1-based code points → 0-based characters
                                           (max 0 (1- (plist-get m :column)))
                                           group)))
     matches groups)))

(defun citeline-format-score (score)
  "SCORE as shown: two decimals (\"0.87\"), \"?\" for what is not a number."
  (if (numberp score) (format "%.2f" (min 1.0 (max 0.0 (float score)))) "?"))

(defun citeline-semantic-xrefs (result root)
  "Xref items for a semantic citeline.lines RESULT plist, files under ROOT.
One per section, in the server's order (by score), at the section's line
the server chose; the summary is the score, the heading and that line."
  (let* ((matches (append (plist-get result :matches) nil))
         (groups (citeline--groups (mapcar (lambda (m) (plist-get m :path)) matches))))
    (cl-mapcar
     (lambda (m group)
       (let* ((heading (citeline-display (or (plist-get m :x-heading) "")))
              (title (if (string-empty-p heading) (plist-get m :path) heading))
              (line (string-trim (citeline-display (or (plist-get m :text) ""))))
              (summary (concat (propertize (citeline-format-score (plist-get m :score))
                                           'face 'shadow)
                               "  " (propertize title 'face 'bold)
                               (if (string-empty-p line) "" (concat " — " line)))))
         (xref-make (citeline--mark-unsaved m summary)
                    (citeline--make-location (citeline--file root (plist-get m :path))
                                             (plist-get m :line) 0 group))))
     matches groups)))

(defun citeline-concepts-xrefs (result root)
  "Xref items for the citeline.concepts RESULT plist, files under ROOT."
  (let* ((concepts (append (plist-get result :concepts) nil))
         (groups (citeline--groups (mapcar (lambda (c) (plist-get c :path)) concepts))))
    (cl-mapcar
     (lambda (c group)
       (let ((title (plist-get c :title)))
         (xref-make (concat (plist-get c :concept_id)
                            (if (and (stringp title) (not (string-empty-p title)))
                                (concat " — " (citeline-display title)) ""))
                    (citeline--make-location (citeline--file root (plist-get c :path))
                                             1 0 group))))
     concepts groups)))

(defun citeline-show-xrefs (xrefs &optional fetcher)
  "Show XREFS in an *xref* buffer in their order.
FETCHER, when given, is the function the buffer calls for its items
\(again on \[revert-buffer]); by default one returning XREFS."
  (let ((fetcher (or fetcher (lambda () xrefs)))
        (xref-show-xrefs-function (or citeline-show-xrefs-function
                                      xref-show-xrefs-function)))
    (if (fboundp 'xref-show-xrefs)
        (xref-show-xrefs fetcher nil)
      (xref--show-xrefs fetcher nil))))

(defun citeline--present (xrefs result what &optional fetcher)
  "Show XREFS from RESULT (WHAT names the search); return XREFS.
FETCHER: see `citeline-show-xrefs'."
  (if (null xrefs)
      (message "citeline: no results for %s" what)
    (citeline-show-xrefs xrefs fetcher)
    (when (eq (plist-get result :truncated) t)
      (message "citeline: showing %d of %d results" (length xrefs) (plist-get result :total))))
  xrefs)

(defun citeline--read (prompt history)
  "Read a non-empty string with PROMPT and minibuffer HISTORY.
The region or the symbol at point is the default."
  (let* ((default (if (use-region-p)
                      (buffer-substring-no-properties (region-beginning) (region-end))
                    (thing-at-point 'symbol t)))
         (text (read-string (if default (format "%s (default %s): " prompt default)
                              (concat prompt ": "))
                            nil history default)))
    (if (string-blank-p text) (user-error "Empty query") text)))

;;;; Hits that moved or changed since the search

;; A hit cites lines of a file as they were when the search ran.  After a
;; Markdown buffer is saved (and by hand, `citeline-verify') the hits of the
;; last `citeline-search' are sent to the server's citeline.verify (SPEC
;; §18), and the *xref* buffer showing them marks each hit no longer where
;; it was; `citeline-reanchor' jumps to where its text is now.

(defcustom citeline-verify-on-save t
  "Non-nil: check the last search's hits again when a Markdown buffer is saved.
Done in the background when an *xref* buffer still shows that search; the
hits whose text moved, changed or went away are then marked in it."
  :type 'boolean)

(defconst citeline-verify-batch 100
  "The most citations the server checks in one request.")

(cl-defstruct (citeline--search (:constructor citeline--make-search (result root server xrefs)))
  "A `citeline-search' shown in an *xref* buffer, and what verify said of its hits."
  result root server xrefs verify fetcher (generation 0))

(defvar citeline--last-search nil
  "The last `citeline-search' (a `citeline--search'), for re-verifying its hits.")

(defun citeline--citation (hit)
  "The citation sent for HIT (a plist): place, hashes, heading and snippet.
The snippet lets the server say how much of the cited text a changed
section keeps."
  (let ((citation (list :path (plist-get hit :path)
                        :line_start (plist-get hit :line_start)
                        :line_end (plist-get hit :line_end))))
    (dolist (key '(:section_sha256 :content_sha256 :heading :snippet))
      (when (stringp (plist-get hit key))
        (setq citation (append citation (list key (plist-get hit key))))))
    citation))

(defun citeline-verify-place (r)
  "\"path:a-b\" of the verify result R's place today.
\"path\" when it has no lines; nil without a path."
  (let ((path (plist-get r :path))
        (a (plist-get r :line_start))
        (b (plist-get r :line_end)))
    (cond ((not (stringp path)) nil)
          ((and (integerp a) (integerp b)) (format "%s:%d-%d" path a b))
          (t path))))

(defun citeline-verify-mark (r)
  "The mark shown before a hit whose verify result R is not valid, or nil.
\"[moved → b.md:40-48]\", \"[changed 71% → a.md:7-9]\", \"[stale]\" or
\"[missing]\"."
  (let ((status (plist-get r :status)))
    (when (and status (not (equal status "valid")))
      (let* ((place (citeline-verify-place r))
             (arrow (if place (concat " → " (citeline-display place)) ""))
             (similarity (plist-get r :similarity)))
        (pcase status
          ("moved" (format "[moved%s]" arrow))
          ("changed" (format "[changed%s%s]"
                             (if (numberp similarity)
                                 (format " %d%%" (floor (+ 0.5 (* 100 similarity))))
                               "")
                             arrow))
          (_ (format "[%s]" status)))))))

(defun citeline--marked-xrefs (search)
  "The xref items of SEARCH, each marked as its last verify result says.
Each summary carries its hit's index as the text property `citeline-index'."
  (let ((results (citeline--search-verify search))
        (i -1))
    (mapcar (lambda (xref)
              (setq i (1+ i))
              (let* ((mark (citeline-verify-mark (nth i results)))
                     (summary (concat (if mark (concat (propertize mark 'face 'warning) " ") "")
                                      (xref-item-summary xref))))
                (put-text-property 0 (length summary) 'citeline-index i summary)
                (xref-make summary (xref-item-location xref))))
            (citeline--search-xrefs search))))

(defun citeline--search-buffers (search)
  "The live *xref* buffers showing SEARCH."
  (cl-remove-if-not
   (lambda (buffer)
     (and (citeline--search-fetcher search)
          (eq (buffer-local-value 'xref--fetcher buffer) (citeline--search-fetcher search))))
   (cl-remove-if-not (lambda (b) (local-variable-p 'xref--fetcher b)) (buffer-list))))

(defun citeline--show-verify (search results)
  "Keep RESULTS (a list of verify results) in SEARCH and mark its *xref* buffers."
  (setf (citeline--search-verify search) results)
  (dolist (buffer (citeline--search-buffers search))
    (with-current-buffer buffer
      (let ((line (line-number-at-pos)) (column (current-column)))
        (xref-revert-buffer)
        (goto-char (point-min))
        (forward-line (1- line))
        (move-to-column column)))))

(defun citeline-verify-summary (results)
  "A summary of the verify RESULTS: \"3 hits: 2 valid, 1 moved\"."
  (let ((n (length results)) parts)
    (dolist (status '("valid" "moved" "changed" "stale" "missing"))
      (let ((count (cl-count status results :key (lambda (r) (plist-get r :status))
                             :test #'equal)))
        (when (> count 0) (push (format "%d %s" count status) parts))))
    (format "%d hit%s: %s" n (if (= n 1) "" "s") (string-join (nreverse parts) ", "))))

(defun citeline--verify-requests (search)
  "The citeline.verify requests (plists) for SEARCH's hits, 100 at most each."
  (let ((hits (append (plist-get (citeline--search-result search) :hits) nil))
        (root (eglot--path-to-uri (citeline--search-root search)))
        requests)
    (while hits
      (let ((batch (seq-take hits citeline-verify-batch)))
        (setq hits (nthcdr citeline-verify-batch hits))
        (push (list :citations (vconcat (mapcar #'citeline--citation batch)) :root root)
              requests)))
    (nreverse requests)))

(defun citeline--search-server-now (search)
  "The server that ran SEARCH, when it still runs; else the current one."
  (let ((server (citeline--search-server search)))
    (if (and server (jsonrpc-running-p server)) server (citeline-server))))

;;;###autoload
(defun citeline-verify ()
  "Check the hits of the last `citeline-search' against the files now.
Hits no longer where they were are marked in the *xref* buffer showing
the search: [moved → path:a-b], [changed N% → path:a-b] (N: the share of
the cited words the section keeps), [stale] or [missing].  Return the
verify results, one plist per hit, in the search's order."
  (interactive)
  (let* ((search (or citeline--last-search
                     (user-error "citeline: no citeline-search to verify")))
         (server (citeline--search-server-now search))
         (results (cl-loop for request in (citeline--verify-requests search)
                           append (append (plist-get (citeline-execute "citeline.verify"
                                                                       request server)
                                                     :results)
                                          nil))))
    (cl-incf (citeline--search-generation search))
    (citeline--show-verify search results)
    (when (called-interactively-p 'interactive)
      (message "citeline: %s" (citeline-verify-summary results)))
    results))

(defun citeline--verify-async (search)
  "Check SEARCH's hits in the background; mark its *xref* buffers when done.
A later check's answer wins over an earlier one's."
  (let* ((server (ignore-errors (citeline--search-server-now search)))
         (generation (cl-incf (citeline--search-generation search)))
         (requests (citeline--verify-requests search))
         (answers (make-vector (length requests) nil))
         (pending (length requests)))
    (when (and server requests)
      (citeline--flush-changes server)
      (cl-loop
       for request in requests
       for n from 0
       do (let ((n n))
            (jsonrpc-async-request
             server :workspace/executeCommand
             (list :command "citeline.verify" :arguments (vector request))
             :success-fn
             (lambda (result)
               (aset answers n (append (plist-get result :results) nil))
               (when (and (= (cl-decf pending) 0)
                          (= generation (citeline--search-generation search)))
                 (citeline--show-verify search (apply #'append (append answers nil)))))
             :error-fn
             (lambda (err)
               (message "citeline: could not check the search's hits: %s"
                        (or (plist-get err :message) err)))
             :timeout citeline-request-timeout))))))

(defun citeline--after-save ()
  "Check the last search's hits again after a Markdown buffer is saved.
Only while an *xref* buffer shows that search (`citeline-verify-on-save')."
  (when (and citeline-verify-on-save
             citeline--last-search
             (or (citeline--markdown-buffer-p)
                 (and buffer-file-name (string-match-p "\\.\\(md\\|markdown\\)\\'" buffer-file-name)))
             (citeline--search-buffers citeline--last-search))
    (condition-case err
        (citeline--verify-async citeline--last-search)
      (error (message "citeline: could not check the search's hits: %s"
                      (error-message-string err))))))

(add-hook 'after-save-hook #'citeline--after-save)

(defcustom citeline-verify-on-focus t
  "Non-nil: check the last search's hits again when Emacs gains focus.
Files changed by another program (a `git checkout', another editor) are
then seen as when a buffer is saved (see `citeline-verify-on-save')."
  :type 'boolean)

(defun citeline--after-focus ()
  "Check the last search's hits again when a frame of Emacs gains focus.
For `after-focus-change-function'; a frame whose focus cannot be told
counts as focused, focus leaving Emacs does not."
  (when (and citeline-verify-on-focus
             citeline--last-search
             (cl-some #'frame-focus-state (frame-list))
             (citeline--search-buffers citeline--last-search))
    (condition-case err
        (citeline--verify-async citeline--last-search)
      (error (message "citeline: could not check the search's hits: %s"
                      (error-message-string err))))))

(add-function :after after-focus-change-function #'citeline--after-focus)

(defun citeline--reanchor-index (search)
  "The index of the hit of SEARCH to re-anchor.
In an *xref* buffer showing it, the item at point; elsewhere the item at
point in the *xref* buffer showing it (the last one visited there)."
  (let* ((buffer (if (memq (current-buffer) (citeline--search-buffers search))
                     (current-buffer)
                   (car (citeline--search-buffers search))))
         (item (and buffer (with-current-buffer buffer (xref--item-at-point))))
         (index (and item (get-text-property 0 'citeline-index (xref-item-summary item)))))
    (or index (user-error "citeline: no search hit at point"))))

;;;###autoload
(defun citeline-reanchor ()
  "Jump from a hit of the last `citeline-search' to where its text is now.
The hit is the one at point in the *xref* buffer (from another buffer:
the one last visited there).  The search's hits are checked again (see
`citeline-verify') and the hit's file is opened at the place verify gives:
its place as cited when still valid, its new place when moved, its
section today when changed.  A missing hit has no place: nothing moves.
Return (STATUS FILE LINE), FILE and LINE nil for a missing hit."
  (interactive)
  (let* ((search (or citeline--last-search
                     (user-error "citeline: no citeline-search to re-anchor")))
         (index (citeline--reanchor-index search))
         (from-xref (derived-mode-p 'xref--xref-buffer-mode))
         (r (nth index (citeline-verify)))
         (status (plist-get r :status))
         (path (plist-get r :path)))
    (if (or (equal status "missing") (not (stringp path)))
        (progn (message "citeline: the cited text is gone (missing): search again")
               (list status nil nil))
      (let* ((file (citeline--file (citeline--search-root search) path))
             (line (let ((a (plist-get r :line_start))) (if (integerp a) a 1)))
             (buffer (find-file-noselect file)))
        (if from-xref (pop-to-buffer buffer t) (switch-to-buffer buffer))
        (goto-char (point-min))
        (forward-line (1- line))
        (unless (equal status "valid")
          (message "citeline: %s → %s" status (citeline-verify-place r)))
        (list status file line)))))

;;;; Commands

;;;###autoload
(defun citeline-search (query)
  "Search the workspace's Markdown sections for QUERY.
Show the hits in an *xref* buffer; hits keep the server's ranking.  When
a Markdown buffer is saved the hits are checked again and those that
moved or changed are marked (`citeline-verify', `citeline-reanchor').
Return the list of xref items."
  (interactive (list (citeline--read "citeline search" 'citeline-search-history)))
  (let* ((server (citeline-server))
         (root (citeline--server-root server))
         ;; :labels: the server names each hit as workspace/symbol does (:x-labels), so
         ;; text before a file's first heading shows the file's title.
         (args (append (list :query query :limit citeline-search-limit :labels t)
                       (and citeline-profile (list :profile citeline-profile))))
         (result (citeline-execute "citeline.search" args server))
         (xrefs (citeline-search-xrefs result root))
         (search (citeline--make-search result root server xrefs)))
    (setf (citeline--search-fetcher search) (lambda () (citeline--marked-xrefs search)))
    (setq citeline--last-search search)
    (citeline--present xrefs result (format "%S" query) (citeline--search-fetcher search))))

;;;###autoload
(defun citeline-set-workspace (folder)
  "Make FOLDER the citeline workspace of the Markdown files under it.
For this session, before `citeline-project-markers' and version control
\(`citeline-workspace-roots' keeps folders across sessions).  When the
current buffer is a file under FOLDER served by a citeline server of
another root, that server is shut down and one for FOLDER started, as
are servers of folders inside FOLDER; the buffers they served are served
again by the server of their workspace.  Return FOLDER's name."
  (interactive
   (list (read-directory-name "citeline workspace: "
                              (or (car citeline--session-roots) default-directory) nil t)))
  (let ((root (citeline--folder folder)))
    (unless (file-directory-p root)
      (user-error "citeline: %s is not a folder" folder))
    (setq citeline--session-roots (cons root (delete root citeline--session-roots)))
    ;; The servers of folders inside FOLDER, and of the buffer when it is under FOLDER,
    ;; serve files whose workspace has changed: stop them and serve their buffers again,
    ;; each with the server of its workspace now.
    (let ((here (and buffer-file-name (citeline--markdown-buffer-p)
                     (file-in-directory-p buffer-file-name root)
                     (ignore-errors (eglot-current-server))))
          (lost nil))
      (dolist (server (citeline--servers))
        (let ((at (citeline--server-root server)))
          (when (and (not (equal at root))
                     (or (eq server here) (file-in-directory-p at root)))
            (setq lost (append lost (eglot--managed-buffers server)))
            (eglot-shutdown server))))
      (dolist (buffer (if (memq (current-buffer) lost)
                          (cons (current-buffer) (delq (current-buffer) lost))
                        lost))
        (when (buffer-live-p buffer)
          (with-current-buffer buffer
            (unless eglot--managed-mode
              (if (eglot-current-server)
                  (eglot--maybe-activate-editing-mode)
                (apply #'eglot (eglot--guess-contact))))))))
    (message "citeline: the workspace of the Markdown files under %s is that folder" root)
    root))

;;;###autoload
(defun citeline-lines (pattern &optional regex)
  "List the workspace lines containing PATTERN, with their columns.
With REGEX (interactively, a prefix argument) PATTERN is an RE2 regular
expression.  Return the list of xref items."
  (interactive (list (citeline--read (if current-prefix-arg "citeline grep (RE2)" "citeline lines")
                                     'citeline-lines-history)
                     current-prefix-arg))
  (let* ((server (citeline-server))
         (args (list :pattern pattern
                     :mode (if regex "regex" "exact")
                     :case_sensitive (if citeline-lines-case-sensitive t :json-false)
                     :limit citeline-lines-limit
                     :context citeline-lines-context))
         (result (citeline-execute "citeline.lines" args server)))
    (citeline--present (citeline-lines-xrefs result (citeline--server-root server))
                       result (format "%S" pattern))))

;;;###autoload
(defun citeline-grep (regex)
  "List the workspace lines matching the RE2 regular expression REGEX."
  (interactive (list (citeline--read "citeline grep (RE2)" 'citeline-lines-history)))
  (citeline-lines regex t))

;;;###autoload
(defun citeline-semantic (query)
  "List the workspace's sections that answer QUERY by meaning, with scores.
QUERY is a question in plain words, in any language; the sections come in
the server's order, those scoring at least `citeline-semantic-threshold'.
Needs the server's semantic extra; a first search on a new workspace
embeds about 20 sections (seconds).  Return the list of xref items."
  (interactive (list (citeline--read "citeline semantic" 'citeline-semantic-history)))
  (let* ((server (citeline-server))
         (args (list :mode "semantic"
                     :query query
                     :threshold citeline-semantic-threshold
                     :limit citeline-search-limit
                     :context 0))
         (result (citeline-execute "citeline.lines" args server)))
    (citeline--present (citeline-semantic-xrefs result (citeline--server-root server))
                       result (format "%S" query))))

;;;###autoload
(defun citeline-concepts (query)
  "List the workspace files whose concept id or title hold QUERY."
  (interactive (list (citeline--read "citeline concepts" 'citeline-concepts-history)))
  (let* ((server (citeline-server))
         (result (citeline-execute "citeline.concepts"
                                   (list :query query :limit citeline-concepts-limit)
                                   server)))
    (citeline--present (citeline-concepts-xrefs result (citeline--server-root server))
                       result (format "%S" query))))

(provide 'citeline)
;;; citeline.el ends here
