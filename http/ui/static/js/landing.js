// The jobs list's first answer, read as part of the document's load.
// app.js adds this module to a visit without a token whose page is the
// default jobs list: a module's imports, this JSON one included, hold the
// browser's load event until it has run, so the list is on the page when
// the load event fires (when a plain `chromium --headless --screenshot`
// takes its picture). Without a token only: an import sends no header.
// The query is jobs.js's default one; when the API refuses it (ACLs on),
// this module does not run and the page goes on as without it.
import jobs from '/v1/jobs?namespace=default&per_page=25&filter=ParentID%20%3D%3D%20%22%22' with { type: 'json' };
import { landing } from './jobs.js';

landing(jobs);
