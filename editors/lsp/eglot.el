;;; eglot.el --- tether in Emacs through eglot  -*- lexical-binding: t; -*-

;; Load this file from your init (`(load "/path/to/editors/lsp/eglot.el")'). Run here with
;; eglot 1.9 on Emacs 28.2 (Debian 12's `emacs-nox' + `elpa-eglot'), by tests/lsp/test_lsp_eglot.py.
;;
;; Eglot runs one server per major mode and project: tether serves `tether-modes' (give it modes
;; no other server serves, or switch). Start it with M-x eglot in such a buffer.
;;
;;   M-x tether-prompt     ask tether about the project (with an active region: about the
;;                         selected lines). It waits for the turn, its progress shown in the echo
;;                         area, and echoes the answer; C-g stops the turn. With a prefix
;;                         argument (C-u M-x tether-prompt) it returns at once and the answer
;;                         comes as a message when the turn ends.
;;   M-x tether-cancel     stop the running turn.
;;   M-x eglot-code-actions  on a region (or the cursor's line): "tether: Ask tether",
;;                         "tether: Explain", "tether: Fix". The answer comes as a message (eglot
;;                         gives up on a command after 10 s, so tether answers it at once).
;;
;; Approval questions come through the minibuffer (eglot's completing-read), and the question
;; (each call with its diff; a command with where it runs) is shown whole in a `*tether review*'
;; window meanwhile (the minibuffer keeps only its last lines). The first action is the safe one
;; and eglot puts it in the minibuffer: RET alone rejects. To allow, replace it (C-a C-k, then
;; `Allow all' or `Allow', TAB completes). C-g at a question dismisses it and stops the turn.
;; Edits land through eglot's workspace edits; when eglot asks before applying one (see
;; `eglot-confirm-server-initiated-edits'), `*tether review*' shows its diff. New files and files
;; not open in Emacs are written to the disk.

(require 'cl-lib)
(require 'diff-mode)
(require 'eglot)
(require 'jsonrpc)

(defgroup tether nil
  "tether, a coding agent, as a language server for eglot."
  :group 'tools)

(defcustom tether-lsp-command '("tether" "lsp")
  "The command that starts tether's language server."
  :type '(repeat string))

(defcustom tether-modes '(text-mode markdown-mode)
  "The major modes tether serves through eglot."
  :type '(repeat symbol))

(defclass tether-eglot-server (eglot-lsp-server) ()
  :documentation "An eglot connection to `tether lsp'.")

(defun tether--contact (&rest _)
  ;; answer "message": `tether.prompt' is answered at once and the turn's answer comes as
  ;; window/showMessage (eglot's code actions give up on a command after 10 s).
  `(tether-eglot-server ,@tether-lsp-command
                        :initializationOptions (:answer "message")))

(add-to-list 'eglot-server-programs `(,tether-modes . tether--contact))

(defun tether--server ()
  "The tether server of this buffer's project, else any running one."
  (let ((here (eglot-current-server)))
    (or (and (cl-typep here 'tether-eglot-server) here)
        (catch 'found
          (maphash (lambda (_project servers)
                     (dolist (s servers)
                       (when (cl-typep s 'tether-eglot-server) (throw 'found s))))
                   eglot--servers-by-project)
          nil)
        (user-error "tether is not running (M-x eglot in a buffer of `tether-modes')"))))

(defun tether--cancel (server)
  (jsonrpc-async-request
   server :workspace/executeCommand '(:command "tether.cancel" :arguments [])
   :success-fn (lambda (result)
                 (unless (eq (plist-get result :cancelled) t)
                   (message "tether: no turn is running")))
   :error-fn (lambda (error) (message "tether: %s" (plist-get error :message)))
   :timeout 10))

(defun tether-cancel ()
  "Stop tether's running turn."
  (interactive)
  (tether--cancel (tether--server)))

(defun tether--answer (result)
  "What the user is shown of a `tether.prompt' RESULT."
  (let ((stop (plist-get result :stopReason))
        (text (or (plist-get result :text) "")))
    (if (equal stop "end_turn")
        text
      (format "tether: %s%s" stop (if (string-empty-p text) "" (concat "\n" text))))))

(defun tether--argument (prompt wait)
  (let ((argument (list :prompt prompt :wait (if wait t :json-false))))
    (when (and (use-region-p) buffer-file-name)
      (let ((start (region-beginning)) (end (region-end)))
        (setq argument
              (append argument
                      (list :textDocument (eglot--TextDocumentIdentifier)
                            :range (list :start (eglot--pos-to-lsp-position start)
                                         :end (eglot--pos-to-lsp-position end)))))))
    argument))

(defun tether-prompt (prompt &optional in-background)
  "Ask tether PROMPT (with an active region: about the selected lines).
Waits for the turn and echoes its answer; \\[keyboard-quit] stops the turn.
With IN-BACKGROUND (a prefix argument), returns at once: the answer comes
as a message, and `tether-cancel' stops the turn."
  (interactive (list (read-string "Ask tether: ") current-prefix-arg))
  (let* ((server (tether--server))
         (params `(:command "tether.prompt"
                   :arguments [,(tether--argument prompt (not in-background))])))
    (if in-background
        (jsonrpc-async-request
         server :workspace/executeCommand params
         :success-fn #'ignore
         :error-fn (lambda (error) (message "tether: %s" (plist-get error :message)))
         :timeout 30)
      (tether--wait server params))))

(defun tether--wait (server params)
  "Run the prompt PARAMS on SERVER until its answer; a quit cancels the turn."
  (let (done result failure abandoned)
    (jsonrpc-async-request
     server :workspace/executeCommand params
     :success-fn (lambda (r)
                   (setq result r done t)
                   (when abandoned (message "%s" (tether--answer r))))
     :error-fn (lambda (e)
                 (setq failure e done t)
                 (when abandoned (message "tether: %s" (plist-get e :message))))
     :timeout nil)                      ; a turn takes minutes
    (condition-case nil
        (while (not done)
          (accept-process-output nil 0.1))
      (quit
       (setq abandoned t)
       (tether--cancel server)
       (message "tether: cancelling the turn")))
    (cond
     (abandoned nil)
     (failure
      (message "tether: %s" (plist-get failure :message)))
     (t (message "%s" (tether--answer result))))))

(defconst tether--review "*tether review*")

(defun tether--show-review (text)
  "Show TEXT in the `*tether review*' window (made for it); return that window."
  (with-current-buffer (get-buffer-create tether--review)
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert text)
      (diff-mode)
      (setq buffer-read-only t)
      (goto-char (point-min))))
  (display-buffer tether--review '(display-buffer-pop-up-window (inhibit-same-window . t))))

(defun tether--close-review (window)
  (when (and (window-live-p window)
             (eq (window-buffer window) (get-buffer tether--review)))
    (quit-restore-window window 'bury)))

(cl-defmethod eglot-handle-request
  ((server tether-eglot-server) (_method (eql window/showMessageRequest)) &key message
   &allow-other-keys)
  "Eglot's question, an approval's whole text in `*tether review*' meanwhile.
Quitting it dismisses it and stops the turn (unanswered, tether would wait)."
  (let ((window (and (stringp message) (string-prefix-p "tether asks to " message)
                     (tether--show-review message))))
    (unwind-protect
        (condition-case nil
            (cl-call-next-method)
          (quit
           (tether--cancel server)
           (message "tether: cancelling the turn")
           nil))                        ; JSON null: dismissed
      (tether--close-review window))))

(defun tether--edit-diff (path buffer edits)
  "A unified diff of what the LSP text EDITS make of BUFFER (visiting PATH)."
  (let ((old (make-temp-file "tether-old")) (new (make-temp-file "tether-new"))
        (coding-system-for-write 'utf-8-unix))
    (unwind-protect
        (progn
          (with-current-buffer buffer (write-region nil nil old nil 'silent))
          (with-temp-buffer
            (insert-buffer-substring buffer)
            (let ((inhibit-message t)) (eglot--apply-text-edits edits nil))
            (write-region nil nil new nil 'silent))
          (with-temp-buffer
            (call-process "diff" nil t nil "-u" "--label" path "--label" path old new)
            (buffer-string)))
      (delete-file old)
      (delete-file new))))

(defun tether--edited (edit)
  "The workspace EDIT's changes of buffers, as (PATH BUFFER TEXT-EDITS) each."
  (let (found)
    (cl-flet ((add (uri edits)
                (let* ((path (eglot--uri-to-path uri))
                       (buffer (find-buffer-visiting path)))
                  (when buffer (push (list path buffer edits) found)))))
      (seq-doseq (change (plist-get edit :documentChanges))
        (when (plist-get change :edits)
          (add (plist-get (plist-get change :textDocument) :uri) (plist-get change :edits))))
      (cl-loop for (uri edits) on (plist-get edit :changes) by #'cddr
               do (add (substring (symbol-name uri) 1) edits)))
    (nreverse found)))

(cl-defmethod eglot-handle-request
  ((_server tether-eglot-server) (_method (eql workspace/applyEdit)) &key edit
   &allow-other-keys)
  "Apply a workspace edit, reporting the change at once.
Eglot's own confirm of it names only the files, so `*tether review*' shows
its diff while that asks (see `eglot-confirm-server-initiated-edits').
Eglot reports changes when Emacs is idle, never while `tether-prompt' waits;
tether fails an edit it does not hear of within seconds."
  (let* ((edited (tether--edited edit))
         (window (and eglot-confirm-server-initiated-edits edited
                      (tether--show-review
                       (mapconcat (lambda (e) (apply #'tether--edit-diff e)) edited "")))))
    (unwind-protect
        (prog1 (cl-call-next-method)
          (dolist (e edited)
            (with-current-buffer (nth 1 e) (eglot--signal-textDocument/didChange))))
      (tether--close-review window))))

(provide 'tether-eglot)
;;; eglot.el ends here
