// Progressive only: every page works without it. Times are written in UTC by the
// server, which cannot know the reader's zone; hovering one shows it in local time.
"use strict";

for (const node of document.querySelectorAll("time[datetime]")) {
  const moment = new Date(node.getAttribute("datetime"));
  if (!Number.isNaN(moment.getTime())) {
    node.title = `${moment.toLocaleString()} (local time)`;
  }
}
