// A collection's display name (its title, any language) by its API name: every list of collections the
// page fetches is remembered here, so that wherever a name comes back (sources, jobs, the scope line)
// the page shows the title people gave it.

const titles = new Map();

/** Remember the titles of `collections` ({name, title}); the list itself, unchanged. */
export function rememberTitles(collections) {
  for (const c of collections || []) if (c?.name) titles.set(c.name, c.title || c.name);
  return collections;
}

/** The title of the collection called `name` (the name itself when none is known). */
export const titleOf = (name) => titles.get(name) || name || "";
