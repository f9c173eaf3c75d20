;;; tether in Emacs with eglot. Not run here (no Emacs on the test machine): written against
;;; eglot's documented commands and jsonrpc.el. Eglot runs one server per major mode, so give
;;; tether modes no other server serves (or switch). Approval questions come through the
;;; minibuffer (completing-read); edits through eglot's workspace edits (see
;;; `eglot-confirm-server-initiated-edits'); code actions on a region (M-x eglot-code-actions)
;;; offer "Ask tether", "Explain" and "Fix". M-x tether-prompt asks about the project.

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((text-mode markdown-mode) . ("tether" "lsp"))))

(defun tether-prompt (prompt)
  "Ask tether PROMPT; the answer is echoed when the turn ends."
  (interactive "sAsk tether: ")
  ;; Asynchronous: a turn takes minutes, and tether's questions and edits come meanwhile.
  (jsonrpc-async-request
   (eglot-current-server) :workspace/executeCommand
   `(:command "tether.prompt" :arguments [(:prompt ,prompt)])
   :success-fn (lambda (result) (message "%s" (plist-get result :text)))
   :error-fn (lambda (error) (message "tether: %s" (plist-get error :message)))
   :timeout 3600))
